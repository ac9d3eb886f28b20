package watcher

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/knotd/knotd/internal/ignore"
)

// mustTree makes a tree of n directories (10 per level), each with one
// note, and returns its root.
func mustTree(b *testing.B, n int) string {
	root := b.TempDir()
	made := 0
	var mk func(dir string, depth int)
	mk = func(dir string, depth int) {
		for i := 0; i < 10 && made < n; i++ {
			d := filepath.Join(dir, fmt.Sprintf("d%d", i))
			if err := os.Mkdir(d, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, "n.md"), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
			made++
		}
		if depth < 4 {
			for i := 0; i < 10 && made < n; i++ {
				mk(filepath.Join(dir, fmt.Sprintf("d%d", i)), depth+1)
			}
		}
	}
	mk(root, 0)
	return root
}

// BenchmarkWatcher_Tree10k measures starting to watch a vault of 10,000
// directories: the walk plus one inotify watch each, until the initial
// full rescan is sent (tearing down is not timed). "walk-only"
// (ignore.Rules.Walk without watches) is the baseline.
func BenchmarkWatcher_Tree10k(b *testing.B) {
	const n = 10000
	root := mustTree(b, n)
	b.Run("walk-only", func(b *testing.B) {
		for b.Loop() {
			dirs := 0
			err := (&ignore.Rules{}).Walk(root, "", ignore.WalkOptions{}, func(rel string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs++
				}
				return err
			})
			if err != nil || dirs != n+1 {
				b.Fatalf("Walk = %v, %d directories; want %d", err, dirs, n+1)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/dir")
	})
	b.Run("watch", func(b *testing.B) {
		watched := 0
		for b.Loop() {
			w := &Watcher{Root: root}
			ctx, cancel := context.WithCancel(context.Background())
			out := make(chan Hint)
			done := make(chan error, 1)
			go func() { done <- w.Run(ctx, out) }()
			if h := <-out; !h.Full() {
				b.Fatalf("first hint %v; want a full rescan", h)
			}
			st := w.counts()
			watched = st.Watched
			b.StopTimer() // tearing 10k watches down is not starting
			cancel()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if st.Polled != 0 {
				b.Fatalf("%d directories polled: the inotify watch limit is too low for this benchmark", st.Polled)
			}
		}
		b.ReportMetric(float64(watched), "watches")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/dir")
	})
}
