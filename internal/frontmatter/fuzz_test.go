package frontmatter

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// addSeeds adds the golden corpus and a few awkward shapes to a fuzz target.
func addSeeds(f *testing.F, add func([]byte)) {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.md"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		add(b)
	}
	for _, s := range []string{
		"", "---", "---\n", "---\n---", "---\r\n---\r\n", "\uFEFF---\n---\n",
		"---\na: 1\r---\n", "---\na: x\u2028b: 2\n---\n", "---\n\uFEFFa: 1\n---\n",
		"---\nknot_session:\n  ~\n---\n", "---\n? knot_session\n: x\n---\n",
		"---\na: |+\n  x\n\n---\n", "---\na:\n- b\n---\n", "---\n- a\n---\n",
		"---\nknot_resume: 'it''s' # c\n---\n", "---\na: 1\n...\n---\n",
	} {
		add([]byte(s))
	}
}

func FuzzParse(f *testing.F) {
	addSeeds(f, func(b []byte) { f.Add(b) })
	f.Fuzz(func(t *testing.T, src []byte) {
		d, err := Parse(src)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) error %v is not a *SyntaxError", src, err)
			}
			if lines := bytes.Count(src, []byte("\n")) + 1; se.Line < 1 || se.Line > lines {
				t.Fatalf("Parse(%q) error on line %d of %d", src, se.Line, lines)
			}
			return
		}
		bom := 0
		if d.BOM {
			bom = len(utf8BOM)
		}
		if d.Block.Start != bom || d.Block.End < d.Block.Start || !bytes.Equal(d.Body, src[d.Block.End:]) {
			t.Fatalf("Parse(%q) = block %v, body %q: not a split of the source", src, d.Block, d.Body)
		}
		for _, p := range d.Fields.Problems {
			if p.Line < 1 || p.Line > bytes.Count(src, []byte("\n"))+1 {
				t.Fatalf("Parse(%q) problem on line %d: %v", src, p.Line, p)
			}
		}
	})
}

// FuzzSetSession: the edit knotd makes to a strand refuses what Parse
// rejects, and otherwise writes the session and only the session: the body
// is the same, a strand without the key gets it by one insertion, and a
// second edit changes nothing.
func FuzzSetSession(f *testing.F) {
	addSeeds(f, func(b []byte) { f.Add(b) })
	f.Fuzz(func(t *testing.T, src []byte) {
		before, perr := Parse(src)
		out, err := SetSession(src, testID)
		if perr != nil {
			if err == nil {
				t.Fatalf("SetSession(%q) succeeded on a source Parse rejects: %v", src, perr)
			}
			return
		}
		if err != nil {
			return // refused: a layout it cannot edit
		}
		after, err := Parse(out)
		if err != nil {
			t.Fatalf("Parse(SetSession(%q)) error: %v\n%q", src, err, out)
		}
		if after.Fields.Session != testID {
			t.Fatalf("SetSession(%q) = %q, whose session is %q", src, out, after.Fields.Session)
		}
		if !bytes.Equal(after.Body, before.Body) {
			t.Fatalf("SetSession(%q) changed the body %q to %q", src, before.Body, after.Body)
		}
		if !bytes.Contains(src, []byte(KeySession)) {
			// Nothing to replace: the edit is one insertion.
			if p, s := commonPrefix(src, out), commonSuffix(src, out); p+s < len(src) {
				t.Fatalf("SetSession(%q) = %q: more than one insertion", src, out)
			}
		}
		if again, err := SetSession(out, testID); err != nil || !bytes.Equal(again, out) {
			t.Fatalf("SetSession twice on %q = %q, %v", src, again, err)
		}
	})
}

func FuzzMergeFields(f *testing.F) {
	addSeeds(f, func(b []byte) { f.Add(b) })
	fields := map[string]any{KeyResume: nil, KeyMode: "replace", "title": "t: 2"}
	f.Fuzz(func(t *testing.T, src []byte) {
		before, perr := Parse(src)
		out, err := MergeFields(src, fields)
		if perr != nil || err != nil {
			if perr != nil && err == nil {
				t.Fatalf("MergeFields(%q) succeeded on a source Parse rejects: %v", src, perr)
			}
			return
		}
		p, err := parse(out)
		if err != nil {
			t.Fatalf("Parse(MergeFields(%q)) error: %v\n%q", src, err, out)
		}
		title, _ := p.find("title")
		if resume, _ := p.find(KeyResume); resume >= 0 || title < 0 || p.entries[title].v.Value != "t: 2" || p.fields.Mode != ModeReplace {
			t.Fatalf("MergeFields(%q) = %q: the fields did not take", src, out)
		}
		if after := p.document(); !bytes.Equal(after.Body, before.Body) {
			t.Fatalf("MergeFields(%q) changed the body %q to %q", src, before.Body, after.Body)
		}
		if again, err := MergeFields(out, fields); err != nil || !bytes.Equal(again, out) {
			t.Fatalf("MergeFields twice on %q = %q, %v", src, again, err)
		}
	})
}

func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "abc", "123", "off", "a: b", "'", "\"", "\\", "\n", " x ", "\uFEFF", "\u0085", "#x", "- x", "0x1F", "2024-01-02", "~"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q, err := quote(s)
		if !utf8.ValidString(s) {
			if err == nil {
				t.Fatalf("quote(%q) = %q; want an error for invalid UTF-8", s, q)
			}
			return
		}
		if err != nil || strings.ContainsAny(q, "\r\n") {
			t.Fatalf("quote(%q) = %q, %v; want one line", s, q, err)
		}
		n, err := decodeValue(q)
		if err != nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" || n.Value != s {
			t.Fatalf("quote(%q) = %q, which reads back as %+v, %v", s, q, n, err)
		}
	})
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func commonSuffix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	return n
}

// FuzzWithoutOwnKeys: stripping knotd's keys never panics, is idempotent,
// and a session knotd adds, or an answer, never changes what is left.
func FuzzWithoutOwnKeys(f *testing.F) {
	addSeeds(f, func(b []byte) { f.Add(b) })
	f.Fuzz(func(t *testing.T, src []byte) {
		once := WithoutOwnKeys(src)
		if twice := WithoutOwnKeys(once); !bytes.Equal(twice, once) {
			t.Fatalf("WithoutOwnKeys is not idempotent on %q: %q then %q", src, once, twice)
		}
		with, err := SetSession(src, "0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21")
		if err != nil {
			return
		}
		if got := WithoutOwnKeys(with); !bytes.Equal(got, once) {
			t.Fatalf("adding knot_session to %q changed what is left: %q, not %q", src, got, once)
		}
		// An answer the user adds is no change of the content either.
		answered, err := MergeFields(with, map[string]any{KeyAnswer: "approve 3f9a2c1b"})
		if err != nil {
			return
		}
		if got := WithoutOwnKeys(answered); !bytes.Equal(got, once) {
			t.Fatalf("adding knot_answer to %q changed what is left: %q, not %q", src, got, once)
		}
	})
}
