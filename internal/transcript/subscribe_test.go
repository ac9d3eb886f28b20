package transcript

import (
	"sync"
	"testing"
	"time"
)

// writerDeadline bounds how long a test waits for a writer that should
// never wait at all; reaching it means the writer blocked.
const writerDeadline = time.Minute

// within runs f in a goroutine and fails the test if it does not return
// before writerDeadline.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(writerDeadline):
		t.Fatalf("%s did not finish within %v: it is blocked", what, writerDeadline)
	}
}

func TestSubscription_SlowSubscriberNeverBlocksWriter(t *testing.T) {
	const total = 10_000
	dir := t.TempDir()
	r := mustCreate(t, dir, testRunID, nil)
	mustRecord(t, r, startedPayload())
	sub := r.Subscribe(64)

	// The subscriber takes one event for every ten the writer writes.
	tokens := make(chan struct{}, total/10+1)
	type result struct {
		seqs            []int64
		duringTheWrites int
	}
	res := make(chan result)
	go func() {
		var out result
		for range tokens {
			if ev, ok := <-sub.C(); ok {
				out.seqs = append(out.seqs, ev.Seq)
			}
		}
		out.duringTheWrites = len(out.seqs)
		for ev := range sub.C() {
			out.seqs = append(out.seqs, ev.Seq)
		}
		res <- out
	}()

	within(t, "the writer", func() {
		for i := 2; i <= total; i++ {
			if _, err := r.Record(UserMessage{Prompt: "event"}); err != nil {
				t.Error(err)
				return
			}
			if i%10 == 0 {
				tokens <- struct{}{} // buffered for every token: never waits
			}
		}
	})
	close(tokens)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	got := <-res

	evs, warns := mustReadFile(t, r.path)
	if len(evs) != total || len(warns) != 0 {
		t.Fatalf("the file has %d events, warnings %v; want all %d", len(evs), warns, total)
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("file event %d has seq %d", i, ev.Seq)
		}
	}
	if got.duringTheWrites > total/10 {
		t.Errorf("the subscriber took %d events during the writes; it may take only %d", got.duringTheWrites, total/10)
	}
	dropped := sub.Dropped()
	if dropped == 0 {
		t.Errorf("Dropped() = 0; a subscriber at a tenth of the rate must have lost events")
	}
	if n := int64(len(got.seqs)) + dropped; n != total-1 {
		t.Errorf("received %d + dropped %d = %d; want the %d events written after Subscribe", len(got.seqs), dropped, n, total-1)
	}
	for i := 1; i < len(got.seqs); i++ {
		if got.seqs[i] <= got.seqs[i-1] {
			t.Fatalf("received seq %d after %d", got.seqs[i], got.seqs[i-1])
		}
	}
	if last := got.seqs[len(got.seqs)-1]; last != total {
		t.Errorf("the last event received is seq %d; want the newest, %d", last, total)
	}
	t.Logf("received %d events (%d while the writer ran), dropped %d", len(got.seqs), got.duringTheWrites, dropped)
}

func TestSubscription_DropsOldestWhenFull(t *testing.T) {
	const total, buffer = 10_000, 8
	r := mustCreate(t, t.TempDir(), testRunID, nil)
	mustRecord(t, r, startedPayload())
	sub := r.Subscribe(buffer) // never read while the writer runs
	within(t, "the writer", func() {
		for i := 2; i <= total; i++ {
			if _, err := r.Record(UserMessage{}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	if got, want := sub.Dropped(), int64(total-1-buffer); got != want {
		t.Errorf("Dropped() = %d; want %d", got, want)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for ev := range sub.C() {
		seqs = append(seqs, ev.Seq)
	}
	if len(seqs) != buffer || seqs[0] != total-buffer+1 || seqs[buffer-1] != total {
		t.Errorf("received %v; want the newest %d, %d to %d", seqs, buffer, total-buffer+1, total)
	}
}

func TestSubscription_Close(t *testing.T) {
	r := mustCreate(t, t.TempDir(), testRunID, nil)
	s0 := r.Subscribe(0) // at least 1
	mustRecord(t, r, startedPayload())
	s1 := r.Subscribe(4)
	s2 := r.Subscribe(4)
	if s0.Since() != 0 || s1.Since() != 1 {
		t.Errorf("Since() = %d, %d; want 0, 1", s0.Since(), s1.Since())
	}
	if ev := <-s0.C(); ev.Seq != 1 {
		t.Errorf("unbuffered-asked subscription got seq %d; want 1", ev.Seq)
	}
	ev := mustRecord(t, r, UserMessage{Prompt: "x"})

	s1.Close()
	s1.Close() // idempotent
	if got, ok := <-s1.C(); !ok || got.Seq != ev.Seq {
		t.Errorf("after Close, the buffered event = %v, %v; want seq %d", got.Seq, ok, ev.Seq)
	}
	if _, ok := <-s1.C(); ok {
		t.Errorf("the channel is open after Close")
	}
	mustRecord(t, r, UserMessage{Prompt: "y"}) // not sent to s1: no panic

	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	s2.Close() // after the Recorder's Close
	s2.Close()
	n := 0
	for range s2.C() {
		n++
	}
	if n != 2 {
		t.Errorf("s2 received %d events; want 2", n)
	}
	s3 := r.Subscribe(1)
	if _, ok := <-s3.C(); ok {
		t.Errorf("a subscription to a closed Recorder has an open channel")
	}
	s3.Close()
	if s3.Since() != 3 {
		t.Errorf("Since() after close = %d; want 3", s3.Since())
	}
}

func TestSubscription_ConcurrentSubscribeAndClose(t *testing.T) {
	r := mustCreate(t, t.TempDir(), testRunID, nil)
	mustRecord(t, r, startedPayload())
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				s := r.Subscribe(2)
				select {
				case <-s.C():
				default:
				}
				s.Close()
			}
		}()
	}
	within(t, "the writer", func() {
		for range 2000 {
			if _, err := r.Record(UserMessage{}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
}
