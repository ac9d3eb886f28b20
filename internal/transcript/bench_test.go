package transcript

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// benchPrompt is a typical small payload.
var benchPrompt = UserMessage{Prompt: strings.Repeat("a note line with some words\n", 8)}

func benchRecord(b *testing.B, subscribers int, read bool) {
	r, err := Create(b.TempDir(), testRunID, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.Record(startedPayload()); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	for range subscribers {
		s := r.Subscribe(64)
		if read {
			go func() { // a slow reader: decodes every payload twice
				defer func() { done <- struct{}{} }()
				for ev := range s.C() {
					for range 2 {
						_, _ = ev.Payload()
					}
				}
			}()
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := r.Record(benchPrompt); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
	if read {
		for range subscribers {
			<-done
		}
	}
}

// BenchmarkRecord measures lines written per second with no subscriber,
// with subscribers that never read (every line takes the drop path) and
// with subscribers reading slower than the writer. The writer's rate should
// not depend on them.
func BenchmarkRecord(b *testing.B) {
	b.Run("no-subscriber", func(b *testing.B) { benchRecord(b, 0, false) })
	b.Run("1-stalled-subscriber", func(b *testing.B) { benchRecord(b, 1, false) })
	b.Run("10-stalled-subscribers", func(b *testing.B) { benchRecord(b, 10, false) })
	b.Run("1-slow-reader", func(b *testing.B) { benchRecord(b, 1, true) })
}

// writeBenchTranscript writes a transcript of n lines (every tenth one of
// big bytes) and returns its path.
func writeBenchTranscript(b *testing.B, dir, id string, n int, big int) string {
	r, err := Create(dir, id, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.Record(startedPayload()); err != nil {
		b.Fatal(err)
	}
	large := UserMessage{Prompt: strings.Repeat("x", big)}
	for i := 1; i < n-1; i++ {
		p := benchPrompt
		if i%10 == 0 {
			p = large
		}
		if _, err := r.Record(p); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := r.Record(Finished{Outcome: "ok"}); err != nil {
		b.Fatal(err)
	}
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
	return r.path
}

// BenchmarkRead measures decoding a 10,000-line transcript in which every
// tenth line is 16 KiB.
func BenchmarkRead(b *testing.B) {
	const lines = 10_000
	data, err := os.ReadFile(writeBenchTranscript(b, b.TempDir(), testRunID, lines, 16<<10))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		evs, warns, err := Read(bytes.NewReader(data))
		if err != nil || len(warns) != 0 || len(evs) != lines {
			b.Fatalf("Read = %d, %v, %v", len(evs), warns, err)
		}
	}
	b.ReportMetric(float64(b.N*lines)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkList lists 10 runs of 12 lines with one big line of 128 KiB
// or 4 MiB: List reads the first line and the last few KiB, so the two
// should cost about the same.
func BenchmarkList(b *testing.B) {
	for _, big := range []int{128 << 10, 4 << 20} {
		b.Run(fmt.Sprintf("big-lines-%dKiB", big>>10), func(b *testing.B) {
			dir := b.TempDir()
			for i := range 10 {
				writeBenchTranscript(b, dir, runID(i), 12, big)
			}
			b.ResetTimer()
			for range b.N {
				runs, err := List(dir)
				if err != nil || len(runs) != 10 || !runs[0].Finished {
					b.Fatalf("List = %d runs, %v", len(runs), err)
				}
			}
		})
	}
}
