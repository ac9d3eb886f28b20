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
			got, err := v.recon.reconcile(append([]watcher.Hint{{Dir: true, Listing: listing}}, tt.extra...))
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
	got, err := v.recon.reconcile([]watcher.Hint{{Dir: true, Listing: l}})
	if err != nil || !slices.Equal(got, []string{"a.md"}) {
		t.Errorf("reconcile = %q, %v; want [a.md] (deleted: a directory is no strand)", got, err)
	}
}

// TestSortCandidates: of the candidates naming one path, the newest look
// wins: this pass's walk, then a file hint, then the listing, then the
// record alone.
func TestSortCandidates(t *testing.T) {
	info := fakeInfo{}
	tests := []struct {
		name string
		in   []candidate
		want []candidate
	}{
		{"empty", nil, nil},
		{
			name: "sorted by path",
			in:   []candidate{{path: "b.md", src: fromListing}, {path: "a/c.md", src: fromListing}, {path: "a.md", src: fromListing}},
			want: []candidate{{path: "a.md", src: fromListing}, {path: "a/c.md", src: fromListing}, {path: "b.md", src: fromListing}},
		},
		{
			name: "a hint beats the listing",
			in:   []candidate{{path: "a.md", info: info, src: fromListing}, {path: "a.md", src: fromHint}},
			want: []candidate{{path: "a.md", src: fromHint}},
		},
		{
			name: "the walk beats a hint and a record",
			in:   []candidate{{path: "a.md", src: fromRecord}, {path: "a.md", src: fromHint}, {path: "a.md", info: info, src: fromWalk}},
			want: []candidate{{path: "a.md", info: info, src: fromWalk}},
		},
		{
			name: "a record alone stays",
			in:   []candidate{{path: "b.md", src: fromRecord}, {path: "a.md", info: info, src: fromListing}},
			want: []candidate{{path: "a.md", info: info, src: fromListing}, {path: "b.md", src: fromRecord}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sortCandidates(tt.in); !slices.Equal(got, tt.want) {
				t.Errorf("sortCandidates = %+v; want %+v", got, tt.want)
			}
		})
	}
}

func TestWithinAny(t *testing.T) {
	tests := []struct {
		rel  string
		dirs []string
		want bool
	}{
		{"a.md", nil, false},
		{"a.md", []string{""}, true},
		{"notes/a.md", []string{"notes"}, true},
		{"notes/deep/a.md", []string{"x", "notes"}, true},
		{"notes.md", []string{"notes"}, false},
		{"notes2/a.md", []string{"notes"}, false},
		{"a/notes/b.md", []string{"notes"}, false},
	}
	for _, tt := range tests {
		if got := withinAny(tt.rel, tt.dirs); got != tt.want {
			t.Errorf("withinAny(%q, %q) = %v; want %v", tt.rel, tt.dirs, got, tt.want)
		}
	}
}

// fakeInfo is a FileInfo that compares equal to itself.
type fakeInfo struct{ fs.FileInfo }
