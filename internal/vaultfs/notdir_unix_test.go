//go:build unix

package vaultfs

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
)

// TestIsNotDir: a path below a file (a folder on the way replaced by a
// file) is told from a path that is missing or readable.
func TestIsNotDir(t *testing.T) {
	root, _, _ := vault(t)
	for _, tt := range []struct {
		name string
		rel  string
		want bool
	}{
		{"below a file", filepath.Join("note.md", "x.md"), true},
		{"missing", "none.md", false},
		{"there", "note.md", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := root.Lstat(tt.rel)
			if got := IsNotDir(err); got != tt.want {
				t.Fatalf("IsNotDir(%v) = %v; want %v", err, got, tt.want)
			}
			if tt.name == "missing" && !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Lstat(%s) = %v; want it missing", tt.rel, err)
			}
		})
	}
}
