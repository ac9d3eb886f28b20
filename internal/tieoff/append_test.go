package tieoff

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/strand"
)

// TestAppend_AfterHandEdits appends to tie-offs a user edited: the new
// section always comes out whole and top-level, and what was there stays.
func TestAppend_AfterHandEdits(t *testing.T) {
	first := string(mustFormat(t, mkSection(0, strand.Created, "n.md", "Reply.")))
	next := mkSection(1, strand.Modified, "n.md", "Next reply.")
	tests := []struct {
		name     string
		existing string
		joint    string // what Append puts between the old end and the section
		problems int    // problems Parse reports afterwards
	}{
		{"ends with newline", first, separator, 0},
		{"no final newline", first + "my note", "\n" + separator, 0},
		{"CRLF ending", strings.ReplaceAll(first, "\n", "\r\n"), separator, 0},
		{"fence left open", first + "```\ncode\n", "```\n" + separator, 0},
		{"fence left open, no newline", first + "~~~~\ncode", "\n~~~~\n" + separator, 0},
		{"comment left open", first + "<!-- todo\n", "-->\n" + separator, 0},
		{"blank file", "\n\n", "", 0},
		{"blank file without newline", "  ", "\n", 0},
		{"notes and no section", "My notes about this strand.\n", separator, 1},
		{"notes with an open fence", "```\nnotes\n", "```\n" + separator, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, dir := testVault(t)
			path := filepath.Join(dir, "n.tieoff.md")
			if err := os.WriteFile(path, []byte(tt.existing), 0o644); err != nil {
				t.Fatal(err)
			}
			off := mustAppend(t, root, "n.tieoff.md", next)
			got := mustReadFile(t, path)
			want := tt.existing + tt.joint + string(mustFormat(t, next))
			if string(got) != want {
				t.Fatalf("file after Append = %q; want %q", got, want)
			}
			if want := int64(len(tt.existing) + len(tt.joint)); off != want {
				t.Errorf("offset = %d; want %d", off, want)
			}
			secs, probs := Parse(got)
			if len(probs) != tt.problems {
				t.Errorf("Parse problems = %s; want %d", problemsString(probs), tt.problems)
			}
			if len(secs) == 0 {
				t.Fatal("no section read back")
			}
			if err := sameSection(secs[len(secs)-1], written(next)); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestAppend_LastSectionOutsideWindow: when the last section started more
// than the repair window ago, Append only makes sure of the final newline.
func TestAppend_LastSectionOutsideWindow(t *testing.T) {
	root, _ := testVault(t)
	big := strings.Repeat("A long reply line.\n", repairWindow/10)
	mustAppend(t, root, "n.tieoff.md", mkSection(0, strand.Created, "n.md", big))
	mustAppend(t, root, "n.tieoff.md", mkSection(1, strand.Modified, "n.md", big))
	secs := mustRead(t, root, "n.tieoff.md")
	if len(secs) != 2 || secs[1].Body != big {
		t.Fatalf("Read = %d sections", len(secs))
	}
}

func TestAppend_Refuses(t *testing.T) {
	root, dir := testVault(t)
	s := mkSection(0, strand.Created, "n.md", "x")

	if _, err := Append(root, "no/such/dir/n.tieoff.md", s); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Append into a missing directory = %v; want ErrNotExist", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "no")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Append created a directory: %v", err)
	}

	if _, err := Append(root, "bad.tieoff.md", Section{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Append(invalid section) = %v; want ErrInvalid", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.tieoff.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Append(invalid section) created the file: %v", err)
	}

	if err := os.Mkdir(filepath.Join(dir, "d.tieoff.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".", "d.tieoff.md"} {
		if _, err := Append(root, name, s); !errors.Is(err, ErrNotRegular) {
			t.Errorf("Append(directory %q) = %v; want ErrNotRegular", name, err)
		}
	}
	for _, name := range []string{"../n.tieoff.md", "/etc/n.tieoff.md"} {
		if _, err := Append(root, name, s); err == nil {
			t.Errorf("Append(%q) succeeded; want an error (outside the vault)", name)
		}
	}
}

func TestReplace(t *testing.T) {
	root, dir := testVault(t)
	const name = "n.tieoff.md"
	path := filepath.Join(dir, name)
	_, doc := threeSections(t)
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	s := mkSection(9, strand.Modified, "n.md", "Only this.")
	if err := Replace(root, name, s); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	if got := mustReadFile(t, path); !bytes.Equal(got, mustFormat(t, s)) {
		t.Errorf("after Replace = %q; want only the new section", got)
	}
	secs := mustRead(t, root, name)
	if len(secs) != 1 || sameSection(secs[0], written(s)) != nil {
		t.Errorf("Read after Replace = %+v", secs)
	}
	if runtime.GOOS != "windows" {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("mode after Replace = %v, %v; want 0640 kept", fi.Mode(), err)
		}
	}
	// A new file, and nothing left behind.
	fresh := filepath.Join(dir, "fresh.tieoff.md")
	if err := Replace(root, "fresh.tieoff.md", s); err != nil {
		t.Fatalf("Replace(new file): %v", err)
	}
	if got := mustReadFile(t, fresh); !bytes.Equal(got, mustFormat(t, s)) {
		t.Errorf("new file = %q", got)
	}
	// A new file gets the permissions an editor would give a note.
	editor := filepath.Join(t.TempDir(), "editor.md")
	if err := os.WriteFile(editor, nil, notePerm); err != nil {
		t.Fatal(err)
	}
	if fi, ei := mustStat(t, fresh), mustStat(t, editor); fi.Mode() != ei.Mode() {
		t.Errorf("new tie-off mode = %v; want %v like a note an editor creates", fi.Mode(), ei.Mode())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v; want the two tie-offs only", names)
	}
	if err := Replace(root, "missing/x.tieoff.md", s); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Replace into a missing directory = %v; want ErrNotExist", err)
	}
	if err := Replace(root, name, Section{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Replace(invalid) = %v; want ErrInvalid", err)
	}
}

func mustStat(t *testing.T, path string) fs.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}
