package ignore

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// walkTree makes a vault of nested directories with files and ignore
// files for the concurrent walk's tests.
func walkTree(t *testing.T) string {
	root := t.TempDir()
	for i := range 12 {
		for j := range 4 {
			for k := range 3 {
				mustWrite(t, filepath.Join(root, fmt.Sprintf("d%02d/e%d/n%d.md", i, j, k)), "x")
			}
			mustWrite(t, filepath.Join(root, fmt.Sprintf("d%02d/e%d/drafts/x.md", i, j)), "x")
		}
		mustWrite(t, filepath.Join(root, fmt.Sprintf("d%02d/top.md", i)), "x")
	}
	mustWrite(t, filepath.Join(root, ".gitignore"), "drafts/\n")
	mustWrite(t, filepath.Join(root, "d03/.gitignore"), "e1/\n")
	mustWrite(t, filepath.Join(root, "node_modules/m.md"), "x")
	return root
}

// TestRules_WalkConcurrent: a concurrent walk visits exactly what Walk
// visits, applies every directory's ignore files, keeps each directory's
// entries in lexical order, and leaves no goroutine behind.
func TestRules_WalkConcurrent(t *testing.T) {
	root := walkTree(t)
	var want []string
	err := (&Rules{}).Walk(root, "", WalkOptions{}, func(rel string, _ fs.DirEntry, err error) error {
		want = append(want, rel)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	if slices.Contains(want, "d03/e1/n0.md") || slices.Contains(want, "d00/e0/drafts/x.md") || !slices.Contains(want, "d11/e3/n2.md") {
		t.Fatalf("Walk visited %d paths, ignore files not applied as the test expects", len(want))
	}
	for _, workers := range []int{0, 1, 2, 4, 16} {
		t.Run(fmt.Sprint(workers), func(t *testing.T) {
			before := runtime.NumGoroutine()
			var mu sync.Mutex
			var got []string
			children := map[string][]string{}
			err := (&Rules{}).walk(root, "", WalkOptions{}, workers, func(rel string, _ fs.DirEntry, err error) error {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, rel)
				if rel != "" {
					dir := path.Dir(rel)
					if dir == "." {
						dir = ""
					}
					children[dir] = append(children[dir], rel)
				}
				return err
			})
			if err != nil {
				t.Fatalf("Walk with %d workers = %v", workers, err)
			}
			noGoroutinesLeft(t, before)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("Walk with %d workers visited %d paths; Walk visited %d\ngot  %q\nwant %q", workers, len(got), len(want), got, want)
			}
			for dir, c := range children {
				if !slices.IsSorted(c) {
					t.Errorf("Walk with %d workers: the entries of %q came as %q; want lexical order", workers, dir, c)
				}
			}
		})
	}
}

// TestRules_WalkConcurrentStops: SkipDir, SkipAll and errors from any
// goroutine end what they should, and a concurrent Walk returns only after
// every goroutine ended.
func TestRules_WalkConcurrentStops(t *testing.T) {
	root := walkTree(t)
	stop := errors.New("stop")
	tests := []struct {
		name    string
		fn      func(rel string) error
		wantErr error
		// never lists paths that must not be visited.
		never []string
	}{
		{"SkipDir on a directory", func(rel string) error {
			if rel == "d05" || rel == "d07/e2" {
				return fs.SkipDir
			}
			return nil
		}, nil, []string{"d05/top.md", "d05/e0", "d07/e2/n0.md"}},
		{"SkipDir on a file", func(rel string) error {
			if rel == "d09/e0/n0.md" {
				return fs.SkipDir
			}
			return nil
		}, nil, []string{"d09/e0/n1.md", "d09/e0/n2.md"}},
		{"SkipAll deep down", func(rel string) error {
			if rel == "d02/e3/n1.md" {
				return fs.SkipAll
			}
			return nil
		}, nil, []string{"d02/e3/n2.md"}},
		{"error deep down", func(rel string) error {
			if rel == "d10/e1/n2.md" {
				return stop
			}
			return nil
		}, stop, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			var mu sync.Mutex
			seen := map[string]bool{}
			err := (&Rules{}).Walk(root, "", WalkOptions{Concurrent: true}, func(rel string, _ fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				mu.Lock()
				seen[rel] = true
				mu.Unlock()
				return tt.fn(rel)
			})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("concurrent Walk = %v; want %v", err, tt.wantErr)
			}
			noGoroutinesLeft(t, before)
			for _, p := range tt.never {
				if seen[p] {
					t.Errorf("concurrent Walk visited %s; want it skipped", p)
				}
			}
		})
	}
}

// noGoroutinesLeft fails the test unless the number of goroutines comes
// back to before. A walker goroutine has called Done when a concurrent Walk
// returns but may still be on its way out, so the count is awaited, with
// a deadline.
func noGoroutinesLeft(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Errorf("concurrent Walk left %d goroutines running; %d before", runtime.NumGoroutine(), before)
			return
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}
