package reconcile

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/state"
)

// mustDo fails the test at once on err.
func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestStamp_TrustsOnlySettledTimes: an old modification time is
// recorded as it is (reconcile may skip the file while it is unchanged);
// a recent one is not.
func TestStamp_TrustsOnlySettledTimes(t *testing.T) {
	dir := t.TempDir()
	abs := func(rel string) string { return filepath.Join(dir, rel) }
	mustDo(t, os.WriteFile(abs("old.md"), []byte("x"), 0o644))
	mustDo(t, os.WriteFile(abs("new.md"), []byte("x"), 0o644))
	old := time.Now().Add(-time.Hour)
	mustDo(t, os.Chtimes(abs("old.md"), old, old))
	for rel, trusted := range map[string]bool{"old.md": true, "new.md": false} {
		info, err := os.Stat(abs(rel))
		mustDo(t, err)
		if got := Stamp(info) == state.StampOf(info); got != trusted {
			t.Errorf("stamp(%s) trusted = %v; want %v", rel, got, trusted)
		}
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
