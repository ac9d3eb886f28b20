package ignore

import "testing"

func TestScope(t *testing.T) {
	tests := []struct {
		pattern string
		in, out []string
	}{
		{"journal/", []string{"journal/a.md", "journal/2026/b.md", "x/journal/c.md"}, []string{"journal.md", "journals/a.md"}},
		{"/journal/**", []string{"journal/a.md", "journal/2026/b.md"}, []string{"x/journal/c.md", "journal.md"}},
		{"*.private.md", []string{"a.private.md", "notes/b.private.md"}, []string{"a.md", "private.md/x.md"}},
		{"/inbox/*.md", []string{"inbox/a.md"}, []string{"inbox/sub/a.md", "x/inbox/a.md"}},
		{"private", []string{"private/a.md", "x/private/b.md", "private"}, []string{"privates/a.md"}},
	}
	for _, tt := range tests {
		s, err := CompileScope(tt.pattern)
		if err != nil {
			t.Fatalf("CompileScope(%q): %v", tt.pattern, err)
		}
		for _, rel := range tt.in {
			if !s.Contains(rel) {
				t.Errorf("%q does not contain %s", tt.pattern, rel)
			}
		}
		for _, rel := range tt.out {
			if s.Contains(rel) {
				t.Errorf("%q contains %s", tt.pattern, rel)
			}
		}
	}
	for _, bad := range []string{"", "!a/", "# comment", "/"} {
		if _, err := CompileScope(bad); err == nil {
			t.Errorf("CompileScope(%q) = nil error", bad)
		}
	}
}

func FuzzScope(f *testing.F) {
	f.Add("journal/**", "journal/a.md")
	f.Add("*.md", "a/b.md")
	f.Fuzz(func(t *testing.T, pattern, rel string) {
		s, err := CompileScope(pattern)
		if err != nil {
			return
		}
		s.Contains(rel) // never panics
	})
}
