package scheduler

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// gatedWork is a Work function whose calls block until the test releases
// them, recording what ran.
type gatedWork struct {
	mu      sync.Mutex
	runs    []string // "key:job" in start order
	running int      // running calls
	most    int      // the highest running seen
	gates   map[string]chan struct{}
	free    bool // return at once instead of waiting for release
}

func newGatedWork() *gatedWork {
	return &gatedWork{gates: map[string]chan struct{}{}}
}

func (g *gatedWork) work(ctx context.Context, key string, job int) {
	g.mu.Lock()
	g.runs = append(g.runs, fmt.Sprintf("%s:%d", key, job))
	g.running++
	g.most = max(g.most, g.running)
	gate := make(chan struct{})
	g.gates[key] = gate
	free := g.free
	g.mu.Unlock()
	if !free {
		select {
		case <-gate:
		case <-ctx.Done():
		}
	}
	g.mu.Lock()
	g.running--
	g.mu.Unlock()
}

// release lets the running call for key return.
func (g *gatedWork) release(key string) {
	g.mu.Lock()
	gate := g.gates[key]
	delete(g.gates, key)
	g.mu.Unlock()
	close(gate)
}

func (g *gatedWork) snapshot() (runs []string, running, most int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.runs...), g.running, g.most
}

// startScheduler runs s in the bubble and returns a function that stops
// it and checks Run's result.
func startScheduler(t *testing.T, s *Scheduler[int]) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	return func() {
		t.Helper()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v; want context.Canceled", err)
		}
	}
}

func TestScheduler_CollapsesToOneFollowUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedWork()
		s := &Scheduler[int]{Work: g.work}
		stop := startScheduler(t, s)
		defer stop()

		s.Submit("a.md", 1)
		synctest.Wait()
		for job := 2; job <= 10; job++ {
			s.Submit("a.md", job)
		}
		if w, r := schedulerStats(s); w != 1 || r != 1 {
			t.Errorf("during the run = %d waiting, %d running; want 1, 1", w, r)
		}
		g.release("a.md")
		synctest.Wait()
		g.release("a.md")
		synctest.Wait()
		runs, _, _ := g.snapshot()
		if want := []string{"a.md:1", "a.md:10"}; !reflect.DeepEqual(runs, want) {
			t.Errorf("runs = %v; want %v (one follow-up with the newest job)", runs, want)
		}
		if err := s.WaitIdle(t.Context()); err != nil {
			t.Errorf("WaitIdle = %v", err)
		}
	})
}

func TestScheduler_MergeCombinesWaitingJobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedWork()
		s := &Scheduler[int]{Work: g.work, Merge: func(waiting, submitted int) int { return waiting + submitted }}
		stop := startScheduler(t, s)
		defer stop()
		s.Submit("a.md", 1)
		synctest.Wait()
		s.Submit("a.md", 10)
		s.Submit("a.md", 100)
		g.release("a.md")
		synctest.Wait()
		g.release("a.md")
		synctest.Wait()
		if runs, _, _ := g.snapshot(); !reflect.DeepEqual(runs, []string{"a.md:1", "a.md:110"}) {
			t.Errorf("runs = %v; want [a.md:1 a.md:110]", runs)
		}
	})
}

func TestScheduler_ConcurrencyLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedWork()
		s := &Scheduler[int]{Concurrency: 3, Work: g.work}
		stop := startScheduler(t, s)
		defer stop()
		for i := range 10 {
			s.Submit(fmt.Sprintf("k%d", i), i)
		}
		for i := range 10 {
			synctest.Wait()
			_, running, _ := g.snapshot()
			if want := min(3, 10-i); running != want {
				t.Fatalf("after %d releases, %d running; want %d", i, running, want)
			}
			runs, _, _ := g.snapshot()
			key, _, _ := strings.Cut(runs[i], ":")
			g.release(key)
		}
		synctest.Wait()
		runs, _, most := g.snapshot()
		if len(runs) != 10 || most != 3 {
			t.Errorf("%d runs, at most %d at once; want 10 runs, at most 3", len(runs), most)
		}
	})
}

func TestScheduler_FIFOAcrossKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedWork()
		s := &Scheduler[int]{Concurrency: 1, Work: g.work}
		stop := startScheduler(t, s)
		defer stop()
		s.Submit("a", 1)
		synctest.Wait()
		s.Submit("b", 1)
		s.Submit("c", 1)
		s.Submit("a", 2) // a's follow-up waits behind b and c
		s.Submit("b", 2) // b keeps its place
		for _, k := range []string{"a", "b", "c", "a"} {
			synctest.Wait()
			g.release(k)
		}
		synctest.Wait()
		if runs, _, _ := g.snapshot(); !reflect.DeepEqual(runs, []string{"a:1", "b:2", "c:1", "a:2"}) {
			t.Errorf("runs = %v; want [a:1 b:2 c:1 a:2]", runs)
		}
	})
}

// TestScheduler_ZeroConcurrencyRunsOneAtATime: a Scheduler whose
// Concurrency is not set runs one job at a time (the daemon always sets
// the configured concurrency; the scheduler knows no config).
func TestScheduler_ZeroConcurrencyRunsOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedWork()
		s := &Scheduler[int]{Work: g.work}
		stop := startScheduler(t, s)
		defer stop()
		s.Submit("a", 1)
		s.Submit("b", 1)
		synctest.Wait()
		if w, r := schedulerStats(s); w != 1 || r != 1 {
			t.Errorf("with two keys submitted = %d waiting, %d running; want 1, 1", w, r)
		}
		g.release("a")
		synctest.Wait()
		g.release("b")
		synctest.Wait()
		if runs, _, _ := g.snapshot(); !reflect.DeepEqual(runs, []string{"a:1", "b:1"}) {
			t.Errorf("runs = %v; want [a:1 b:1]", runs)
		}
	})
}

// TestScheduler_NeverTwoRunsPerKey hammers a few keys from several
// goroutines with work of varied (fake) durations: no key ever runs twice
// at once, and each key's last run carries its last submitted job (no
// change is lost).
func TestScheduler_NeverTwoRunsPerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		active, lastRun, lastSubmitted := map[string]int{}, map[string]int{}, map[string]int{}
		var overlaps []string
		runs := 0
		s := &Scheduler[int]{Concurrency: 4}
		s.Work = func(ctx context.Context, key string, job int) {
			mu.Lock()
			active[key]++
			if active[key] > 1 {
				overlaps = append(overlaps, key)
			}
			runs++
			lastRun[key] = job
			mu.Unlock()
			time.Sleep(time.Duration(job%7+1) * time.Millisecond) // fake clock: simulated work
			mu.Lock()
			active[key]--
			mu.Unlock()
		}
		stop := startScheduler(t, s)
		defer stop()
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := range 200 {
					key, job := fmt.Sprintf("k%d", (i+w)%5), w*1000+i
					mu.Lock()
					lastSubmitted[key] = job
					s.Submit(key, job)
					mu.Unlock()
					time.Sleep(time.Duration(i%3) * time.Millisecond)
				}
			})
		}
		wg.Wait()
		if err := s.WaitIdle(t.Context()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(overlaps) > 0 {
			t.Errorf("keys run twice at once: %v", overlaps)
		}
		if !reflect.DeepEqual(lastRun, lastSubmitted) {
			t.Errorf("last job run per key = %v; want the last submitted %v", lastRun, lastSubmitted)
		}
		if runs >= 8*200 {
			t.Errorf("%d runs for %d submits; want collapsing", runs, 8*200)
		}
	})
}

func TestScheduler_ThousandKeysRunOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		count := map[string]int{}
		s := &Scheduler[int]{Work: func(_ context.Context, key string, _ int) {
			mu.Lock()
			count[key]++
			mu.Unlock()
		}}
		for i := range 1000 {
			s.Submit(fmt.Sprintf("notes/%04d.md", i), i)
		}
		stop := startScheduler(t, s)
		defer stop()
		if err := s.WaitIdle(t.Context()); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(count) != 1000 {
			t.Errorf("%d keys ran; want 1000", len(count))
		}
		for k, n := range count {
			if n != 1 {
				t.Errorf("%s ran %d times; want 1", k, n)
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.entries) != 0 || s.queue.len() != 0 {
			t.Errorf("after idle: %d entries, %d queued; want none", len(s.entries), s.queue.len())
		}
	})
}

func TestScheduler_WaitIdleCoversFollowUpsFromWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedWork()
		g.free = true
		var s *Scheduler[int]
		resubmitted := false
		// Like the processor's re-check: the first run finds the strand
		// changed during the run and submits a follow-up before returning.
		s = &Scheduler[int]{Work: func(ctx context.Context, key string, job int) {
			g.work(ctx, key, job)
			if !resubmitted {
				resubmitted = true
				s.Submit(key, job+1)
			}
		}}
		if err := s.WaitIdle(t.Context()); err != nil {
			t.Fatalf("WaitIdle on an empty scheduler = %v", err)
		}
		stop := startScheduler(t, s)
		defer stop()
		s.Submit("a", 1)
		if err := s.WaitIdle(t.Context()); err != nil {
			t.Fatal(err)
		}
		if runs, _, _ := g.snapshot(); !reflect.DeepEqual(runs, []string{"a:1", "a:2"}) {
			t.Errorf("runs when idle = %v; want [a:1 a:2]", runs)
		}
	})
}

func TestScheduler_WaitIdleHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Scheduler[int]{Work: func(context.Context, string, int) {}}
		s.Submit("a", 1) // never runs: no Run
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if err := s.WaitIdle(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("WaitIdle without Run = %v; want DeadlineExceeded", err)
		}
	})
}

func TestScheduler_CancelStopsCleanly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedWork()
		s := &Scheduler[int]{Concurrency: 2, Work: g.work}
		stop := startScheduler(t, s)
		for i := range 5 {
			s.Submit(fmt.Sprintf("k%d", i), i)
		}
		synctest.Wait()
		stop() // the two running calls see ctx done and return; Run waits for them
		runs, running, _ := g.snapshot()
		if len(runs) != 2 || running != 0 {
			t.Errorf("after cancel: %d started, %d running; want 2 started, 0 running", len(runs), running)
		}
		if w, r := schedulerStats(s); w != 3 || r != 0 {
			t.Errorf("after cancel = %d waiting, %d running; want 3, 0", w, r)
		}
		// The waiting jobs run under a new Run.
		g.mu.Lock()
		g.free = true
		g.mu.Unlock()
		stop = startScheduler(t, s)
		defer stop()
		if err := s.WaitIdle(t.Context()); err != nil {
			t.Fatal(err)
		}
		if runs, _, _ := g.snapshot(); len(runs) != 5 {
			t.Errorf("%d runs after the second Run; want 5", len(runs))
		}
	})
}

func TestScheduler_RunRefusesMisuse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if err := (&Scheduler[int]{}).Run(t.Context()); err == nil {
			t.Error("Run without Work = nil; want an error")
		}
		s := &Scheduler[int]{Work: func(context.Context, string, int) {}}
		stop := startScheduler(t, s)
		defer stop()
		synctest.Wait()
		if err := s.Run(t.Context()); !errors.Is(err, errSchedulerRunning) {
			t.Errorf("second Run = %v; want errSchedulerRunning", err)
		}
	})
}

func TestKeyQueue(t *testing.T) {
	var q keyQueue
	next := 0
	for round := range 5 {
		for i := range 3000 {
			q.push(fmt.Sprint(round*3000 + i))
		}
		for range 2000 + round*200 {
			if got, want := q.pop(), fmt.Sprint(next); got != want {
				t.Fatalf("pop() = %s; want %s", got, want)
			}
			next++
		}
		if cap(q.keys) > 3*q.len()+4096 {
			t.Errorf("queue of %d holds a backing array of %d", q.len(), cap(q.keys))
		}
	}
	for q.len() > 0 {
		if got, want := q.pop(), fmt.Sprint(next); got != want {
			t.Fatalf("pop() = %s; want %s", got, want)
		}
		next++
	}
	if next != 15000 {
		t.Errorf("popped %d keys; want 15000", next)
	}
}

// BenchmarkScheduler_Submit measures Submit with 10,000 keys: queueing a
// new key, and collapsing into a key that already waits.
func BenchmarkScheduler_Submit(b *testing.B) {
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("notes/%05d.md", i)
	}
	b.Run("new", func(b *testing.B) {
		s := &Scheduler[int]{}
		i := 0
		for b.Loop() {
			if i == len(keys) {
				b.StopTimer()
				s = &Scheduler[int]{}
				i = 0
				b.StartTimer()
			}
			s.Submit(keys[i], i)
			i++
		}
	})
	b.Run("collapse", func(b *testing.B) {
		s := &Scheduler[int]{}
		for i, k := range keys {
			s.Submit(k, i)
		}
		i := 0
		for b.Loop() {
			s.Submit(keys[i%len(keys)], i)
			i++
		}
	})
}

// BenchmarkScheduler_Throughput measures submit-to-done for 10,000 keys
// with work that does nothing: the scheduler's own overhead per run.
func BenchmarkScheduler_Throughput(b *testing.B) {
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("notes/%05d.md", i)
	}
	s := &Scheduler[int]{Work: func(context.Context, string, int) {}}
	ctx, cancel := context.WithCancel(b.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	for b.Loop() {
		for i, k := range keys {
			s.Submit(k, i)
		}
		if err := s.WaitIdle(ctx); err != nil {
			b.Fatal(err)
		}
	}
	cancel()
	<-done
	b.ReportMetric(float64(b.N*len(keys))/b.Elapsed().Seconds(), "runs/s")
}

// schedulerStats reports how many keys have a job waiting (queued, or as
// the follow-up of a running job) and how many are running.
func schedulerStats[J any](s *Scheduler[J]) (waiting, running int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting, s.running
}

// TestScheduler_Snapshot: what runs, then what waits in the order it will
// start, with a running key's follow-up said, not queued.
func TestScheduler_Snapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedWork()
		s := &Scheduler[int]{Concurrency: 2, Work: g.work}
		if got := s.Snapshot(); len(got) != 0 {
			t.Fatalf("a new scheduler's snapshot = %+v; want none", got)
		}
		stop := startScheduler(t, s)
		defer stop()
		for i, k := range []string{"b.md", "a.md", "d.md", "c.md"} {
			s.Submit(k, i)
		}
		synctest.Wait() // b.md and a.md run
		s.Submit("a.md", 9)
		want := []Entry[int]{
			{Key: "a.md", Job: 9, Running: true, FollowUp: true},
			{Key: "b.md", Running: true},
			{Key: "d.md", Job: 2},
			{Key: "c.md", Job: 3},
		}
		if got := s.Snapshot(); !reflect.DeepEqual(got, want) {
			t.Errorf("snapshot = %+v;\nwant %+v", got, want)
		}
		for _, k := range []string{"a.md", "b.md", "d.md", "c.md", "a.md"} {
			g.release(k)
			synctest.Wait()
		}
		if got := s.Snapshot(); len(got) != 0 {
			t.Errorf("snapshot when idle = %+v; want none", got)
		}
	})
}

// TestScheduler_SubmitSaysWhatItDid: Submit says whether the key now
// waits its turn, waits behind its run in progress, or already waited
// (knotd run tells the user which).
func TestScheduler_SubmitSaysWhatItDid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGatedWork()
		s := &Scheduler[int]{Work: g.work, Concurrency: 1}
		stop := startScheduler(t, s)
		defer stop()
		steps := []struct {
			key  string
			want Submitted
		}{
			{"a.md", Queued},   // runs at once
			{"b.md", Queued},   // waits for a.md (concurrency 1)
			{"b.md", Merged},   // b.md already waits
			{"a.md", FollowUp}, // behind a.md's run
			{"a.md", Merged},   // its follow-up already waits
		}
		for i, st := range steps {
			if got := s.Submit(st.key, i); got != st.want {
				t.Errorf("step %d: Submit(%s) = %d; want %d", i, st.key, got, st.want)
			}
			synctest.Wait()
		}
		g.release("a.md")
		synctest.Wait()
		g.release("b.md")
		synctest.Wait()
		g.release("a.md")
		synctest.Wait()
	})
}
