package vault

import (
	"io/fs"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/watcher"
)

// listingOf makes the listing a watcher's walk would carry for the strands
// rels, from what os.Lstat says of them now.
func listingOf(t *testing.T, e *env, rels ...string) *watcher.Listing {
	t.Helper()
	l := &watcher.Listing{}
	for _, rel := range rels {
		info, err := os.Lstat(e.abs(rel))
		if err != nil {
			t.Fatal(err)
		}
		l.Files = append(l.Files, watcher.ListedFile{Path: rel, Info: info})
	}
	return l
}

// TestReconcile_FullRescanListing: a full rescan that carries the
// watcher's listing is reconciled from it, without a walk; the paths that
// other hints of the same batch name are looked at again, since those
// hints are newer than the listing.
func TestReconcile_FullRescanListing(t *testing.T) {
	strands := []string{"a.md", "b.md", "notes/c.md", "notes/d.md", "gone.md", "kept.md"}
	tests := []struct {
		name string
		// change edits the processed vault after the listing was taken.
		change func(e *env)
		extra  []watcher.Hint
		want   []string
	}{
		{
			name:   "nothing changed",
			change: func(*env) {},
			want:   nil,
		},
		{
			// A change after the listing is followed by a hint of its own:
			// the full rescan alone trusts the listing.
			name:   "changed after the listing, no hint yet",
			change: func(e *env) { e.write("a.md", "# a, edited\n") },
			want:   nil,
		},
		{
			name:   "changed after the listing, file hint in the batch",
			change: func(e *env) { e.write("a.md", "# a, edited\n") },
			extra:  []watcher.Hint{{Path: "a.md"}},
			want:   []string{"a.md"},
		},
		{
			name: "changed after the listing, directory hint in the batch",
			change: func(e *env) {
				e.write("notes/c.md", "# c, edited\n")
				e.remove("notes/d.md")
				e.write("notes/new.md", "# new\n")
			},
			extra: []watcher.Hint{{Path: "notes", Dir: true}},
			want:  []string{"notes/c.md", "notes/d.md", "notes/new.md"},
		},
		{
			name:   "a plain full rescan in the batch walks again",
			change: func(e *env) { e.write("b.md", "# b, edited\n") },
			extra:  []watcher.Hint{{Dir: true}},
			want:   []string{"b.md"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.onceFresh()
			for _, rel := range strands {
				e.write(rel, "# "+rel+"\n")
			}
			e.onceFresh() // every strand processed (and given its session)
			past := time.Now().Add(-time.Hour)
			for _, rel := range strands {
				mustDo(t, os.Chtimes(e.abs(rel), past, past))
			}
			e.onceFresh() // restamped: stamps this old are trusted
			// Deleted while knotd was stopped: not in the listing, still recorded.
			e.remove("gone.md")
			listing := listingOf(t, e, "a.md", "b.md", "kept.md", "notes/c.md", "notes/d.md")
			tt.change(e)
			v := e.open()
			got, err := v.recon.Reconcile(append([]watcher.Hint{{Dir: true, Listing: listing}}, tt.extra...))
			if err != nil {
				t.Fatal(err)
			}
			want := append([]string{"gone.md"}, tt.want...)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("reconcile = %q; want %q", got, want)
			}
		})
	}
}

// TestReconcile_ListingNotRegular: a listed strand path that is not a
// regular file is no strand, as when the walk is reconcile's own.
func TestReconcile_ListingNotRegular(t *testing.T) {
	e := newEnv(t)
	e.onceFresh()
	e.write("a.md", "# a\n")
	e.onceFresh()
	e.remove("a.md")
	mustDo(t, os.Mkdir(e.abs("a.md"), 0o755))
	v := e.open()
	info, err := os.Lstat(e.abs("a.md"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Type() != fs.ModeDir {
		t.Fatalf("a.md is %v; want a directory", info.Mode())
	}
	l := &watcher.Listing{Files: []watcher.ListedFile{{Path: "a.md", Info: info}}}
	got, err := v.recon.Reconcile([]watcher.Hint{{Dir: true, Listing: l}})
	if err != nil || !slices.Equal(got, []string{"a.md"}) {
		t.Errorf("reconcile = %q, %v; want [a.md] (deleted: a directory is no strand)", got, err)
	}
}
