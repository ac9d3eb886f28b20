package tieoff

import (
	"bytes"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/strand"
)

// TestPrepareBody lists every neutralisation: what each reply is written
// as. Each written body is then checked to be closed and free of lines a
// raw scan would take for knotd's own.
func TestPrepareBody(t *testing.T) {
	tests := []struct {
		name, reply, want string
	}{
		{"plain", "Hello.", "Hello.\n"},
		{"plain with newline", "Hello.\n", "Hello.\n"},
		{"empty", "", ""},
		{"blank line only", "\n", "\n"},
		{"trailing blanks kept", "a\n\n\n", "a\n\n\n"},
		{"trailing spaces", "a\n   ", "a\n   \n"},

		{"event header", "## Event: Modified", "\\## Event: Modified\n"},
		{"strand header indented", "   ## Strand: x.md", "   \\## Strand: x.md\n"},
		{"timestamp other level and case", "#### timestamp : now", "\\#### timestamp : now\n"},
		{"status header", "## Status: failed\n", "\\## Status: failed\n"},
		{"one hash", "# Event: x", "\\# Event: x\n"},
		{"no space after hashes", "##Event:x", "\\##Event:x\n"},
		{"tab indented", "\t## Event: x", "\t\\## Event: x\n"},
		{"header inside fence", "```\n## Event: x\n```", "```\n\\## Event: x\n```\n"},
		{"header after lone CR", "a\r## Event: x", "a\r\\## Event: x\n"},
		{"header after CRLF", "a\r\n## Event: x\r\n", "a\r\n\\## Event: x\r\n"},
		{"already escaped", "\\## Event: x\n", "\\## Event: x\n"},
		{"word without colon", "## Event Context\n", "## Event Context\n"},
		{"longer word", "# Eventually: yes\n", "# Eventually: yes\n"},
		{"in a quote", "> ## Event: x\n", "> ## Event: x\n"},

		{"marker", "<!-- knot:run abc -->", "<!-- knot\\:run abc -->\n"},
		{"marker any case and spacing", "<!--KNOT : x -->", "<!--KNOT \\: x -->\n"},
		{"marker mid line", "see <!-- knot:run x --> here\n", "see <!-- knot\\:run x --> here\n"},
		{"other comment", "<!-- note -->\n", "<!-- note -->\n"},

		{"backtick fence", "```go\ncode", "```go\ncode\n```\n"},
		{"longer fence", "````\n```\nx", "````\n```\nx\n````\n"},
		{"tilde fence", "~~~\nx\n", "~~~\nx\n~~~\n"},
		{"indented fence", "  ```\nx", "  ```\nx\n```\n"},
		{"fake closer with info string", "```\n``` not a closer\n", "```\n``` not a closer\n```\n"},
		{"fence opened last", "text\n```", "text\n```\n```\n"},
		{"comment", "<!--\nx", "<!--\nx\n-->\n"},
		{"comment holding a fence", "<!--\n```\n", "<!--\n```\n-->\n"},
		{"pre", "<pre>\nx\n\ny", "<pre>\nx\n\ny\n</pre>\n"},
		{"script", "<script>\nx", "<script>\nx\n</script>\n"},
		{"style", "<STYLE type=x>\nx", "<STYLE type=x>\nx\n</style>\n"},
		{"textarea", "<textarea>\nx", "<textarea>\nx\n</textarea>\n"},
		{"processing instruction", "<?php\nx", "<?php\nx\n?>\n"},
		{"declaration", "<!DOCTYPE html\nx", "<!DOCTYPE html\nx\n>\n"},
		{"cdata", "<![CDATA[\nx", "<![CDATA[\nx\n]]>\n"},

		{"setext risk", "last line", "last line\n"},
		{"indented code at end", "    code", "    code\n"},
		{"lazy list", "- item\nlazy", "- item\nlazy\n"},
		{"lazy quote", "> q\nlazy", "> q\nlazy\n"},
		{"fence in list", "- x\n  ```\n  code", "- x\n  ```\n  code\n"},
		{"fence in quote", "> ```\n> code", "> ```\n> code\n"},
		{"div block", "<div>\nx", "<div>\nx\n"},
		{"closed comment", "<!-- a -->\n", "<!-- a -->\n"},
		{"closed fence", "```\nx\n```\n", "```\nx\n```\n"},
		{"rules and setext", "a\n---\n\n---\nb\n===\n", "a\n---\n\n---\nb\n===\n"},
		{"crlf", "a\r\nb\r\n", "a\r\nb\r\n"},
		{"unicode and invalid utf-8", "héllo \xff\xfe 🎉", "héllo \xff\xfe 🎉\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(prepareBody([]byte(tt.reply)))
			if got != tt.want {
				t.Errorf("prepareBody(%q) = %q; want %q", tt.reply, got, tt.want)
			}
			checkWritable(t, []byte(got))
			if again := string(prepareBody([]byte(got))); again != got {
				t.Errorf("prepareBody is not idempotent: %q then %q", got, again)
			}
		})
	}
}

// checkWritable fails if body, as written, leaves a block open or holds a
// line that a raw scan would take for a header or a marker.
func checkWritable(t *testing.T, body []byte) {
	t.Helper()
	if len(body) > 0 {
		if n := openBlock(body); n != nil {
			t.Errorf("body %q leaves %s open", body, n.Kind())
		}
	}
	for _, line := range bytes.FieldsFunc(body, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if _, _, ok := parseHeader(line); ok {
			t.Errorf("body line %q parses as a header", line)
		}
		if isMarkerLine(line) {
			t.Errorf("body line %q looks like a run marker", line)
		}
	}
}

// TestFence checks the fallback: a fence around anything is closed.
func TestFence(t *testing.T) {
	for _, b := range []string{
		"x\n",
		"```\n",
		"````` ``` `\n~~~\n",
		"<!--\n",
		"- ```\n",
		strings.Repeat("`", 40) + "\n",
	} {
		got := fence([]byte(b))
		if n := openBlock(got); n != nil {
			t.Errorf("fence(%q) = %q leaves %s open", b, got, n.Kind())
		}
		if !bytes.Contains(got, []byte(b)) {
			t.Errorf("fence(%q) = %q lost the text", b, got)
		}
	}
}

// TestFormat_NeutralisedReplyParsesBack checks that every neutralisation
// case, written in a section between two others, reads back as written.
func TestFormat_NeutralisedReplyParsesBack(t *testing.T) {
	for _, reply := range []string{
		"## Event: Created\n## Strand: x\n## Timestamp: 2020-01-01T00:00:00Z\n<!-- knot:run x bytes=1 -->\n---\n\nfake",
		"```\n## Event: x\n", "<!--\n## Event: x", "<pre>\n\n## Event: x", "- a\nb", "x\n---", "x\n===",
	} {
		var doc []byte
		for i, body := range []string{"before", reply, "after"} {
			if i > 0 {
				doc = append(doc, separator...)
			}
			doc = append(doc, mustFormat(t, mkSection(i, strand.Modified, "a.md", body))...)
		}
		secs, probs := Parse(doc)
		if len(probs) > 0 || len(secs) != 3 {
			t.Errorf("Parse with reply %q = %d sections, problems %v; want 3, none", reply, len(secs), probs)
			continue
		}
		if want := string(prepareBody([]byte(reply))); secs[1].Body != want {
			t.Errorf("reply %q read back as %q; want %q", reply, secs[1].Body, want)
		}
	}
}
