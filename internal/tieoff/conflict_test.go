package tieoff

import "testing"

func TestConflictOf(t *testing.T) {
	tests := []struct {
		name, want string // want "": not a conflict copy of a tie-off
	}{
		// Syncthing.
		{"x.tieoff.sync-conflict-20261123-120000-ABCDEFG.md", "x.tieoff.md"},
		{"ideas/plan.tieoff.sync-conflict-20261123-120000-ABCDEFG.md", "ideas/plan.tieoff.md"},
		{"Work notes/2026/Q4 plan 🎉.tieoff.sync-conflict-20260101-235959-Z2Z7QRS.md", "Work notes/2026/Q4 plan 🎉.tieoff.md"},
		{"-dash/a.b.tieoff.sync-conflict-20261123-120000-ABCDEFG.md", "-dash/a.b.tieoff.md"},
		{"/abs/x.tieoff.sync-conflict-20261123-120000-ABCDEFG.md", "/abs/x.tieoff.md"},
		// Dropbox and Nextcloud.
		{"x.tieoff (conflicted copy 2026-11-23 120000).md", "x.tieoff.md"},
		{"x.tieoff (Ada's conflicted copy 2026-11-23).md", "x.tieoff.md"},
		{"notes/My Plan.tieoff (Ada's MacBook Pro's conflicted copy 2026-11-23).md", "notes/My Plan.tieoff.md"},
		{"notes/My Plan.tieoff (Ada (work)'s conflicted copy 2026-11-23).md", "notes/My Plan.tieoff.md"},
		{"a (conflicted copy) b.tieoff (conflicted copy 2026-11-23 120000).md", "a (conflicted copy) b.tieoff.md"},
		{"dir with space/x.tieoff (conflicted copy).md", "dir with space/x.tieoff.md"},
		// Copies of copies name the tie-off itself.
		{"x.tieoff.sync-conflict-20261123-120000-ABCDEFG.sync-conflict-20261124-080000-HIJKLMN.md", "x.tieoff.md"},
		{"x.tieoff (conflicted copy 1) (conflicted copy 2).md", "x.tieoff.md"},
		{"x.tieoff (conflicted copy).sync-conflict-20261123-120000-ABCDEFG.md", "x.tieoff.md"},

		// Not a conflict copy.
		{"x.tieoff.md", ""},
		{"ideas/plan.md", ""},
		{"", ""},
		{"x.tieoff (copy 2026-11-23).md", ""},
		{"x.tieoff(conflicted copy 2026-11-23).md", ""},
		{"x.tieoff (conflicted copy 2026-11-23).md.bak", ""},
		{"x.tieoff (conflicted copy 2026-11-23)", ""},
		{"x.tieoff.sync-conflict-20261123-120000-ABCDEFG", ""},
		{"x.tieoff.sync-conflict-20261123-120000-ABCDEFG.txt", ""},
		{"x.tieoff.sync-conflict-20261123-120000-abcdefg.md", ""},
		{"x.tieoff.sync-conflict-20261123-120000-ABCDEF1.md", ""},
		{"x.tieoff.sync-conflict-20261123-120000-ABCDEF.md", ""},
		{"x.tieoff.sync-conflict-20261123-120000-ABCDEFGH.md", ""},
		{"x.tieoff.sync-conflict-2026112-120000-ABCDEFG.md", ""},
		{"x.tieoff.sync-conflict-20261123-12000-ABCDEFG.md", ""},
		{"x.tieoff.sync-conflict-20261123_120000-ABCDEFG.md", ""},
		{"x.tieoff.sync-conflict-20261123-120000-ABCDEFG.md.tmp", ""},
		{".tieoff.sync-conflict-20261123-120000-ABCDEFG.md", ""},
		{"sync-conflict-20261123-120000-ABCDEFG.tieoff.md", ""},
		// Copies of notes, and the tie-offs of such copies.
		{"x.sync-conflict-20261123-120000-ABCDEFG.md", ""},
		{"x.sync-conflict-20261123-120000-ABCDEFG.tieoff.md", ""},
		{"x (conflicted copy 2026-11-23 120000).md", ""},
		{"x (Ada's conflicted copy 2026-11-23).tieoff.md", ""},
		// A conflict copy in a directory's name is not the file's.
		{"x.tieoff.sync-conflict-20261123-120000-ABCDEFG.md/y.md", ""},
		{"d (conflicted copy)/x.tieoff.md", ""},
	}
	for _, tt := range tests {
		got, ok := ConflictOf(tt.name)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("ConflictOf(%q) = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.want != "")
		}
	}
}
