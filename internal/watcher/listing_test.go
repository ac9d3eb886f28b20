package watcher

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestWatcher_Kernel_FullRescanCarriesListing: the startup full rescan
// carries what the walk saw of every file the Filter and the rules keep,
// as os.Lstat sees it.
func TestWatcher_Kernel_FullRescanCarriesListing(t *testing.T) {
	root := t.TempDir()
	for _, rel := range []string{"a.md", "sub/b.md", "sub/deep/c.md", "node_modules/x.md", "notes.txt", ".git/y.md"} {
		mustWrite(t, filepath.Join(root, filepath.FromSlash(rel)), "# "+rel)
	}
	if err := os.Symlink("a.md", filepath.Join(root, "link.md")); err != nil {
		t.Fatal(err)
	}
	k := startKernel(t, root, nil)
	k.mu.Lock()
	listing := k.listing
	k.mu.Unlock()
	if listing == nil {
		t.Fatal("the startup full rescan carries no listing")
	}
	var paths []string
	for _, f := range listing.Files {
		paths = append(paths, f.Path)
		want, err := os.Lstat(filepath.Join(root, filepath.FromSlash(f.Path)))
		if err != nil {
			t.Fatal(err)
		}
		got := f.Info
		if got.Size() != want.Size() || got.Mode() != want.Mode() || !got.ModTime().Equal(want.ModTime()) {
			t.Errorf("%s: listed %d %v %v; os.Lstat says %d %v %v", f.Path, got.Size(), got.Mode(), got.ModTime(), want.Size(), want.Mode(), want.ModTime())
		}
	}
	slices.Sort(paths)
	if want := []string{"a.md", "link.md", "sub/b.md", "sub/deep/c.md"}; !slices.Equal(paths, want) {
		t.Errorf("listing = %q; want %q (strands only, ignored directories left out)", paths, want)
	}
}

// TestLoop_EnqueueKeepsHintsAfterAListing: a queued full rescan absorbs
// the hints after it, unless it carries a listing, which is older than
// they are.
func TestLoop_EnqueueKeepsHintsAfterAListing(t *testing.T) {
	listed := Hint{Dir: true, Listing: &Listing{}}
	file, dir := Hint{Path: "a.md"}, Hint{Path: "notes", Dir: true}
	tests := []struct {
		name string
		in   []Hint
		want []Hint
	}{
		{"plain full rescan absorbs", []Hint{fullRescan, file, dir}, []Hint{fullRescan}},
		{"listed full rescan keeps later hints", []Hint{listed, file, dir}, []Hint{listed, file, dir}},
		{"hints before a listed full rescan are covered", []Hint{file, dir, listed}, []Hint{listed}},
		{"plain full rescan after a listed one replaces it", []Hint{listed, file, fullRescan, dir}, []Hint{fullRescan}},
		{"duplicates after a listing once", []Hint{listed, file, file}, []Hint{listed, file}},
		{"too many after a listing become a plain full rescan", []Hint{listed, {Path: "1.md"}, {Path: "2.md"}, {Path: "3.md"}}, []Hint{fullRescan}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &loop{queued: make(map[Hint]bool), maxPending: 3}
			for _, h := range tt.in {
				l.enqueue(h)
			}
			if !slices.Equal(l.ready, tt.want) {
				t.Errorf("enqueue(%v) leaves %v; want %v", tt.in, l.ready, tt.want)
			}
			all := l.ready[:cap(l.ready)] // the line's whole array
			for len(l.ready) > 0 {
				l.sent()
			}
			if len(l.queued) != 0 {
				t.Errorf("after every hint was sent, %d are still marked queued", len(l.queued))
			}
			// Nothing the line no longer holds may stay reachable through
			// its array: a listing is large.
			for i, h := range all {
				if h.Listing != nil {
					t.Errorf("the line's array keeps a listing at %d after it was sent or dropped", i)
				}
			}
		})
	}
}
