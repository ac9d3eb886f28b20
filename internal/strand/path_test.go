package strand

import (
	"errors"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestIsStrandName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"note.md", true},
		{"My Note 🎉.md", true},
		{"-leading-dash.md", true},
		{".hidden.md", true},
		{"plan.tieoff.md", false},
		{".md", false},
		{"note.markdown", false},
		{"note.MD", false},
		{"note.txt", false},
		{".#note.md", false},
		{"#note.md#", false},
		{".note.md.swp", false},
		{".note.md.swo", false},
		{".note.md.swx", false},
		{"note.md~", false},
		{"4913", false},
		{".syncthing.note.md.tmp", false},
		{"~syncthing~note.md.tmp", false},
		{"note.sync-conflict-20260101-120000-ABCDEFG.md", false},
		{".note.md.icloud", false},
		{"~$note.md", false},
		{".~lock.note.md#", false},
		{"._note.md", false},
		{"note.md.tmp", false},
		{"note.md.bak", false},
	}
	for _, tt := range tests {
		if got := isStrandName(tt.name); got != tt.want {
			t.Errorf("isStrandName(%q) = %v; want %v", tt.name, got, tt.want)
		}
	}
}

func TestValidateRel(t *testing.T) {
	tests := []struct {
		rel string
		ok  bool
	}{
		{"a.md", true},
		{"a/b/c.md", true},
		{"with space/ünïcode.md", true},
		{"", false},
		{"/abs.md", false},
		{"../up.md", false},
		{"a/../b.md", false},
		{"a/./b.md", false},
		{"a//b.md", false},
		{"a/", false},
		{`a\b.md`, false},
		{"C:/x.md", false},
		{"c:x.md", false},
		{"nul\x00.md", false},
		{"..", false},
		{".", false},
	}
	for _, tt := range tests {
		err := ValidateRel(tt.rel)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateRel(%q) = %v; want ok=%v", tt.rel, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrBadPath) {
			t.Errorf("ValidateRel(%q) error %v does not wrap ErrBadPath", tt.rel, err)
		}
	}
}

func TestTieOffPath(t *testing.T) {
	tests := []struct {
		rel, want string
		ok        bool
	}{
		{"a/b.md", "a/b.tieoff.md", true},
		{"b.md", "b.tieoff.md", true},
		{"x.y.md", "x.y.tieoff.md", true},
		{"a/b.tieoff.md", "", false},
		{"a/b.txt", "", false},
		{"../b.md", "", false},
		{"a/.#b.md", "", false},
	}
	for _, tt := range tests {
		got, err := TieOffPath(tt.rel)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("TieOffPath(%q) = %q, %v; want %q ok=%v", tt.rel, got, err, tt.want, tt.ok)
		}
		if tt.ok {
			back, ok := StrandPath(got)
			if !ok || back != tt.rel {
				t.Errorf("StrandPath(%q) = %q, %v; want %q", got, back, ok, tt.rel)
			}
		}
	}
	// Names near the file system's limit: the tie-off's name is cut, at a
	// character boundary, and marked with a hash of the whole name.
	for _, stem := range []string{
		strings.Repeat("a", 245),           // a 248-byte name: its tie-off would be 255 bytes
		strings.Repeat("a", 246),           // one more
		strings.Repeat("a", 252),           // a 255-byte name
		strings.Repeat("東", 84),            // 252 bytes of three-byte characters
		strings.Repeat("a", 200) + "äöü東京", // mixed widths at the cut
	} {
		rel := "notes/" + stem + ".md"
		got, err := TieOffPath(rel)
		base := path.Base(got)
		switch {
		case err != nil:
			t.Errorf("TieOffPath(%d-byte name) = %v", len(stem)+3, err)
		case len(base) > maxNameLen || !utf8.ValidString(base) || !IsTieOff(got) || !strings.HasPrefix(got, "notes/"):
			t.Errorf("TieOffPath(%d-byte name) = %q (%d bytes)", len(stem)+3, got, len(base))
		case len(stem)+len(TieOffExt) <= maxNameLen && base != stem+TieOffExt:
			t.Errorf("TieOffPath(%d-byte name) = %q; want the plain name, it fits", len(stem)+3, got)
		}
		if len(stem)+len(TieOffExt) > maxNameLen {
			if s, ok := StrandPath(got); ok {
				t.Errorf("StrandPath(%q) = %q, true; a shortened name has no inverse", got, s)
			}
			other, _ := TieOffPath("notes/" + stem[:len(stem)-1] + "b.md")
			if other == got {
				t.Errorf("two long names that share their start share the tie-off %q", got)
			}
		}
	}
	for _, bad := range []string{"a.md", ".tieoff.md", "../a.tieoff.md", "a/.#b.tieoff.md"} {
		if s, ok := StrandPath(bad); ok {
			t.Errorf("StrandPath(%q) = %q, true; want false", bad, s)
		}
	}
}

func TestIsStrandPath(t *testing.T) {
	tests := []struct {
		rel  string
		want bool
	}{
		{"notes/a.md", true},
		{".knot/a.md", false},
		{".knot", false},
		{".knotty/a.md", true},
		{"a.tieoff.md", false},
		{"../a.md", false},
	}
	for _, tt := range tests {
		if got := IsStrandPath(tt.rel); got != tt.want {
			t.Errorf("IsStrandPath(%q) = %v; want %v", tt.rel, got, tt.want)
		}
	}
}

func TestAbs(t *testing.T) {
	root := t.TempDir()
	abs := filepath.Join(root, "a", "b.md")
	if got, err := Abs(root, "a/b.md"); err != nil || got != abs {
		t.Fatalf("Abs = %q, %v; want %q", got, err, abs)
	}
	if _, err := Abs(root, "../x.md"); err == nil {
		t.Error("Abs(../x.md) succeeded; want error")
	}
}

func TestIsConflictCopy(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"note.sync-conflict-20261123-120000-ABCDEFG.md", true},
		{"plan.tieoff.sync-conflict-20261123-120000-ABCDEFG.md", true},
		{"note (conflicted copy 2026-11-23 120000).md", true},
		{"note (Ada's conflicted copy 2026-11-23).md", true},
		{"plan.tieoff (conflicted copy 2026-11-23).md", true},
		{"note.md", false},
		{"conflicted copy.md", false},
		{"note (copy).md", false},
		{"note (conflicted copy) draft.md", false},
		{"notes about a sync-conflict.md", false},
		{".syncthing.plan.tieoff.sync-conflict-20261123-120000-ABCDEFG.md.tmp", false},
		{"~syncthing~note.sync-conflict-20261123-120000-ABCDEFG.md.tmp", false},
	}
	for _, tt := range tests {
		if got := IsConflictCopy(tt.name); got != tt.want {
			t.Errorf("IsConflictCopy(%q) = %v; want %v", tt.name, got, tt.want)
		}
		if tt.want && isStrandName(tt.name) {
			t.Errorf("isStrandName(%q) = true; a conflict copy is never a strand", tt.name)
		}
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		rel, dir string
		want     bool
	}{
		{"a.md", "", true},
		{"", "", true},
		{"notes", "notes", true},
		{"notes/a.md", "notes", true},
		{"notes/sub/a.md", "notes", true},
		{"notes.md", "notes", false},
		{"notesx/a.md", "notes", false},
		{"not", "notes", false},
		{"notes", "notes/sub", false},
		{"a.md", "notes", false},
	}
	for _, tt := range tests {
		if got := Within(tt.rel, tt.dir); got != tt.want {
			t.Errorf("Within(%q, %q) = %v; want %v", tt.rel, tt.dir, got, tt.want)
		}
	}
}

func TestValidateRel_NoAllocation(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = ValidateRel("notes/sub/deep/a.md") }); n != 0 {
		t.Errorf("ValidateRel of a valid path allocates %v times; want 0", n)
	}
}
