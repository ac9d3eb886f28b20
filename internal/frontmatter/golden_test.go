package frontmatter

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/testutil"
	"github.com/stretchr/testify/require"
)

// corpusEdit is one edit applied to every strand of the corpus.
type corpusEdit struct {
	name string
	keys []string // the keys it may touch
	run  func([]byte) ([]byte, error)
}

var corpusEdits = []corpusEdit{
	{"session", []string{KeySession}, func(src []byte) ([]byte, error) {
		return SetSession(src, testID)
	}},
	{"ownkeys", []string{KeySession, KeyResume, KeyAnswer}, func(src []byte) ([]byte, error) {
		return MergeFields(src, ownKeysOut)
	}},
	{"merge", []string{KeyMode, KeyEvents, KeyAgent}, func(src []byte) ([]byte, error) {
		return MergeFields(src, map[string]any{KeyMode: ModeReplace, KeyEvents: []string{"created", "modified"}, KeyAgent: nil})
	}},
}

// TestCorpus runs each edit over real-world frontmatter in
// testdata/corpus and compares the result with testdata/golden byte for
// byte. It also checks, independently of the package's own scanner, that
// no byte outside the edited keys' lines changed, that the body is the
// same, and that a second edit changes nothing.
func TestCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, file := range files {
		in, err := os.ReadFile(file)
		require.NoError(t, err)
		name := strings.TrimSuffix(filepath.Base(file), ".md")
		for _, ed := range corpusEdits {
			t.Run(name+"/"+ed.name, func(t *testing.T) {
				out, err := ed.run(in)
				got := out
				if err != nil {
					got = []byte("ERROR: " + err.Error() + "\n")
				}
				testutil.Golden(t, filepath.Join("testdata", "golden", name+"."+ed.name+".golden"), got)
				if err != nil {
					return
				}
				checkOnlyKeysChanged(t, in, out, ed.keys)
				if dIn, dOut := mustParse(t, in), mustParse(t, out); !bytes.Equal(dIn.Body, dOut.Body) {
					t.Errorf("%s %s changed the body: %q -> %q", ed.name, file, dIn.Body, dOut.Body)
				}
				again, err := ed.run(out)
				if err != nil || !bytes.Equal(again, out) {
					t.Errorf("%s %s twice = %q, %v; want %q", ed.name, file, again, err, out)
				}
			})
		}
	}
}

// checkOnlyKeysChanged checks that in and out are the same once the lines of
// keys (and a block added at the top) are taken out of both. It finds those
// lines with its own simple rules, not with the package's scanner.
func checkOnlyKeysChanged(t *testing.T, in, out []byte, keys []string) {
	t.Helper()
	bom := ""
	if bytes.HasPrefix(in, utf8BOM) {
		bom = string(utf8BOM)
	}
	inLines := splitKeepEOL(string(in[len(bom):]))
	if len(inLines) == 0 || strings.TrimRight(strings.TrimRight(inLines[0], "\r\n"), " \t") != "---" {
		// No block in the input: out must be BOM, a new block, the input.
		if !strings.HasPrefix(string(out), bom) || !strings.HasSuffix(string(out), string(in[len(bom):])) {
			t.Fatalf("new block: %q is not the BOM, a block and then %q", out, in)
		}
		block := string(out[len(bom) : len(out)-len(in)+len(bom)])
		if stripped := withoutKeys(block, keys); stripped != "" {
			t.Errorf("new block %q holds more than the keys %v: %q", block, keys, stripped)
		}
		return
	}
	if a, b := withoutKeys(string(in), keys), withoutKeys(string(out), keys); a != b {
		t.Errorf("bytes outside the keys %v changed:\n in  %q\n out %q", keys, a, b)
	}
}

func splitKeepEOL(s string) []string {
	return strings.SplitAfter(s, "\n")
}

// withoutKeys removes from the frontmatter block of doc the lines of keys:
// a line naming the key (quoted or not) at the indentation of the block's
// first key, and the lines after it that are more indented, or are list
// items at the same indentation right after a key line. The delimiter
// lines of a block that holds nothing else are removed too.
func withoutKeys(doc string, keys []string) string {
	lines := splitKeepEOL(doc)
	isDelim := func(l string) bool {
		return strings.TrimRight(strings.TrimPrefix(strings.TrimRight(l, "\r\n"), "\uFEFF"), " \t") == "---"
	}
	if len(lines) == 0 || !isDelim(lines[0]) {
		return doc
	}
	closing := -1
	for i := 1; i < len(lines); i++ {
		if isDelim(lines[i]) {
			closing = i
			break
		}
	}
	indentOf := func(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }
	blank := func(l string) bool { return strings.TrimSpace(l) == "" }
	var keyLine *regexp.Regexp
	alts := make([]string, len(keys))
	for i, k := range keys {
		alts[i] = regexp.QuoteMeta(k)
	}
	keyLine = regexp.MustCompile(`^\s*(?:"|')?(?:` + strings.Join(alts, "|") + `)(?:"|')?\s*:`)
	top := -1
	var kept []string
	kept = append(kept, lines[0])
	for i := 1; i < closing; i++ {
		l := lines[i]
		if top < 0 && !blank(l) && !strings.HasPrefix(strings.TrimSpace(l), "#") {
			top = indentOf(l)
		}
		if indentOf(l) != top || !keyLine.MatchString(l) {
			kept = append(kept, l)
			continue
		}
		j := i + 1
		for j < closing {
			n := lines[j]
			more := !blank(n) && indentOf(n) > top
			item := indentOf(n) == top && strings.HasPrefix(strings.TrimSpace(n), "-")
			if !more && !item {
				break
			}
			j++
		}
		i = j - 1
	}
	if len(kept) == 1 { // only the opening line is left: the block held nothing else
		return strings.Join(lines[closing+1:], "")
	}
	return strings.Join(kept, "") + strings.Join(lines[closing:], "")
}
