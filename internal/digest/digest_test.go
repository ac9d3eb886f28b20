package digest

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/knotd/knotd/internal/strand"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

// updateDigest rewrites the golden files under testdata. It has its
// own name because other tests in this package may define -update.
var updateDigest = flag.Bool("update-digest", false, "rewrite the golden files under testdata")

// digestPlanV1 and digestPlanV2 are two versions of a realistic note.
const digestPlanV1 = `---
knot_session: 0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21
tags: [project, q3]
---
# Garden plan

Raised beds along the south fence, see [[Soil notes]] and the
[seed catalogue](https://seeds.example.com/catalogue).

## Tasks

- [ ] Order compost
- [ ] Fix the hose
- [x] Measure the beds

## Ideas

Maybe a trellis for beans. ![[trellis.png]]

## Budget

About 300 for wood.
`

const digestPlanV2 = `---
knot_session: 0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21
tags: [project, q3]
---
# Garden plan

Raised beds along the south fence, see [[Soil notes|soil]] and the
[seed catalogue](https://seeds.example.com/catalogue). Watering by drip line.

## Tasks

- [x] Order compost
- [ ] Fix the hose
- [ ] Buy drip line kit
- [x] Measure the beds

## Ideas

Maybe a trellis for beans, and <https://example.org/drip> looks good.

## Schedule

Beds in April, planting in May.
`

type testCase struct {
	name       string
	ev         strand.EventType
	path       string
	prev, cur  string
	want, deny []string // substrings the digest must and must not contain
}

var testCases = []testCase{
	{
		name: "created_plan", ev: strand.Created, path: "garden/plan.md", cur: digestPlanV1,
		want: []string{
			"New note **Garden plan**: 36 words, 4 headings, 3 tasks (1 done), 3 links.",
			"**Outline**\n- `#` Garden plan (15 words)\n- `##` Tasks (9 words)\n- `##` Ideas (7 words)\n- `##` Budget (5 words)\n",
			"**Open tasks**\n- Order compost\n- Fix the hose\n\n",
			"- `[[Soil notes]]`\n- `https://seeds.example.com/catalogue` (seed catalogue)\n- `![[trellis.png]]`",
		},
		deny: []string{"knot_session", "Measure the beds"},
	},
	{
		name: "modified_plan", ev: strand.Modified, path: "garden/plan.md", prev: digestPlanV1, cur: digestPlanV2,
		want: []string{
			"**Garden plan**: 49 words (+13), 4 tasks (2 done).",
			"**Headings added**\n- `##` Schedule (7 words)",
			"**Headings removed**\n- `##` Budget (5 words)",
			"**Tasks done**\n- Order compost",
			"**Tasks added**\n- Buy drip line kit",
			"**Links added**\n- `https://example.org/drip`",
			"**Links removed**\n- `![[trellis.png]]`",
			"**Edited sections**\n- `#` Garden plan: +4 words\n- `##` Tasks: +4 words\n- `##` Ideas: +3 words\n",
		},
		deny: []string{"Soil notes", "Tasks removed", "Tasks reopened"},
	},
	{
		name: "deleted_plan", ev: strand.Deleted, path: "garden/plan.md", prev: digestPlanV2,
		want: []string{
			"Deleted **Garden plan**. Final state: 49 words, 4 headings, 4 tasks (2 done), 3 links.",
			"**Open tasks**\n- Fix the hose\n- Buy drip line kit\n\n**Links**\n- `[[Soil notes]]`\n" +
				"- `https://seeds.example.com/catalogue` (seed catalogue)\n- `https://example.org/drip`\n",
		},
		deny: []string{"Order compost"},
	},
	{
		name: "created_empty", ev: strand.Created, path: "inbox/empty.md",
		want: []string{"New note **empty**: empty.\n"},
	},
	{
		name: "deleted_unknown_content", ev: strand.Deleted, path: "a/gone.md",
		want: []string{"Deleted **gone**. Final state: empty.\n"},
	},
	{
		name: "tasks", ev: strand.Modified, path: "todo.md",
		prev: "- [ ] a\n- [x] b\n- [ ] c\n- [x] d\n- [ ] same\n",
		cur:  "- [x] a\n- [ ] b\n- [ ] e\n- [X] f\n- [ ] same\n",
		want: []string{
			"**Tasks done**\n- a\n", "**Tasks reopened**\n- b\n",
			"**Tasks added**\n- e\n- f (done)\n", "**Tasks removed**\n- c\n- d (done)\n",
		},
		deny: []string{"- same"},
	},
	{
		name: "headings", ev: strand.Modified, path: "h.md",
		prev: "# Top\n\n## Keep\n\n## Gone\n\nbody\n\n### Level\n",
		cur:  "# Top\n\n## Keep\n\n## New\n\nnew body text\n\n## Level\n",
		want: []string{
			"**Headings added**\n- `##` New (4 words)\n- `##` Level (1 word)\n",
			"**Headings removed**\n- `##` Gone (2 words)\n- `###` Level (1 word)\n",
		},
		deny: []string{"Keep", "Edited sections"},
	},
	{
		name: "links", ev: strand.Modified, path: "links.md",
		prev: "[a](https://a.example) [[Old]] ![[old.png]] ![pic](p.png)\n",
		cur: "[a](https://a.example) [text][ref] <https://auto.example> https://bare.example/x\n" +
			"[[Page|alias]] ![[Embed#Part]] [[a]] `[[code]]` \\[[escaped]] [x](<>) [^1]\n\n" +
			"[ref]: https://ref.example\n[^1]: https://footnote.example\n\n```\n[[fenced]]\n```\n",
		want: []string{
			"**Links added**\n- `https://ref.example` (text)\n- `https://auto.example`\n- `https://bare.example/x`\n" +
				"- `[[Page]]`\n- `![[Embed#Part]]`\n- `[[a]]`\n- `https://footnote.example`\n\n",
			"**Links removed**\n- `[[Old]]`\n- `![[old.png]]`\n- image `p.png`\n",
		},
		deny: []string{"code", "escaped", "fenced", "^1", "a.example"},
	},
	{
		name: "text_only", ev: strand.Modified, path: "journal.md",
		prev: "Intro line.\n\n## Monday\n\nRain all day.\n\n## Tuesday\n\nSun.\n",
		cur:  "Intro line, longer now.\n\n## Monday\n\nRain all day.\n\n## Tuesday\n\nClouds.\n",
		want: []string{
			"**Monday**: 10 words (+2).\n\n**Edited sections**\n- *top of note*: +2 words\n- `##` Tuesday: ±0 words\n",
		},
		deny: []string{"`##` Monday", "Headings"},
	},
	{
		name: "formatting_only", ev: strand.Modified, path: "f.md",
		prev: "Some plain words here.\n- [ ] task\n",
		cur:  "Some **plain** _words_ here.\n\n- [ ]   task\n",
		want: []string{"**f**: 5 words (±0), 1 task (0 done).\n\nOnly formatting or markup changed; the text reads the same.\n"},
	},
	{
		name: "frontmatter_only", ev: strand.Modified, path: "n.md",
		prev: "---\ntags: [a]\n---\n# N\n", cur: "---\ntags: [a, b]\n---\n# N\n",
		want: []string{"**N**: only the frontmatter changed.\n"},
	},
	{
		name: "no_change", ev: strand.Modified, path: "n.md", prev: "# N\n\ntext\n", cur: "# N\n\ntext\n",
		want: []string{"**N**: no change to the note's content.\n"},
	},
	{
		name: "title_change", ev: strand.Modified, path: "t.md", prev: "## Draft\n\n# Old\n", cur: "## Draft\n\n# New\n",
		want: []string{"**New** (was **Old**): 2 words (±0)."},
	},
	{
		name: "frontmatter_ignored", ev: strand.Created, path: "fm.md",
		cur:  "---\ntitle: \"# Not a heading\"\nlinks: \"[[NotALink]]\"\ntodo: \"- [ ] not a task\"\n---\nJust two.\n",
		want: []string{"New note **fm**: 2 words.\n"},
		deny: []string{"NotALink", "Not a heading", "not a task"},
	},
	{
		name: "unterminated_frontmatter", ev: strand.Created, path: "u.md",
		cur:  "---\ntitle: x\n\nBody words\n",
		want: []string{"New note **u**: 4 words.\n"},
	},
	{
		name: "crlf_bom", ev: strand.Created, path: "win.md",
		cur:  "\ufeff---\r\ntags: [x]\r\n---\r\n# Windows note\r\n\r\n- [ ] a task\r\n- [x] [[Linked]]\r\n",
		want: []string{"New note **Windows note**: 5 words, 1 heading, 2 tasks (1 done), 1 link.", "- `[[Linked]]`"},
		deny: []string{"tags", "\r"},
	},
	{
		name: "code_blocks_ignored", ev: strand.Created, path: "code.md",
		cur: "```md\n# not a heading\n- [ ] not a task\n[[not a link]] https://not.example\n```\n\n" +
			"    - [ ] indented code\n\nInline `[[nope]] - [ ] nope` only.\n\n<div>\n[[html]]\n</div>\n",
		want: []string{"New note **code**: 16 words.\n"},
		deny: []string{"Outline", "Open tasks", "Links"},
	},
	{
		name: "escaping", ev: strand.Created, path: "esc.md",
		cur: "# `code` *em* [[x]] <b>bold</b> #tag ==hl== $m$ %%c%% a&amp;b\n\n" +
			"## 2024. plan\n\n## - dash \\\n\n- [ ] [[Inner]] <script>alert(1)</script> ~~s~~ [l](u) ^id\n" +
			"- [ ] # hash \\*lit\\*\n\n[x\\`y](https://a.example/`b`?q=1&r=2)\n",
		want: []string{
			"New note **code em \\[\\[x\\]\\] bold \\#tag \\=\\=hl\\=\\= \\$m\\$ \\%\\%c\\%\\% a\\&b**:",
			"- `#` code em \\[\\[x\\]\\] bold \\#tag",
			"- `##` 2024\\. plan", "- `##` \\- dash \\\\",
			"- \\[\\[Inner\\]\\] alert(1) s l \\^id\n- \\# hash \\*lit\\*\n",
			"- ``https://a.example/`b`?q=1&r=2`` (x\\`y)",
		},
	},
	{
		name: "bounded", ev: strand.Created, path: "long.md",
		cur:  manyTasks(25) + "# " + strings.Repeat("long ", 40) + "\n",
		want: []string{"- t20\n- … and 5 more\n", "`#` long long", " l…**: 65 words"},
		deny: []string{"t21"},
	},
	{
		name: "invalid_utf8", ev: strand.Modified, path: "bin.md",
		prev: "# Ti\xfftle\n\x00\x01\x02 [[a\xc3]]\n", cur: "# Ti\xfftle\n\x00\x01\x02 [[b\xc3]]\n- [ ] \x1b[31mred\xff\n",
		want: []string{"**Ti\ufffdtle**", "- `[[b\ufffd]]`", "- \\[31mred\ufffd"},
	},
	{
		name: "unknown_event", ev: strand.EventType(9), path: "x.md", cur: "# X\n\nsome text\n",
		want: []string{"Unknown event EventType(9) on **X**: 3 words, 1 heading.\n"},
	},
}

func manyTasks(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "- [ ] t%d\n", i)
	}
	return b.String() + "\n"
}

func runDigest(c testCase) string {
	var prev, cur []byte
	if c.prev != "" {
		prev = []byte(c.prev)
	}
	if c.cur != "" {
		cur = []byte(c.cur)
	}
	return Of(c.ev, c.path, prev, cur)
}

func TestDigest_Reports(t *testing.T) {
	for _, c := range testCases {
		t.Run(c.name, func(t *testing.T) {
			got := runDigest(c)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("Of(%v, %q) = %q; want it to contain %q", c.ev, c.path, got, w)
				}
			}
			for _, d := range c.deny {
				if strings.Contains(got, d) {
					t.Errorf("Of(%v, %q) = %q; want no %q", c.ev, c.path, got, d)
				}
			}
			if err := checkSafe(got); err != nil {
				t.Errorf("Of(%v, %q) = %q; unsafe in a tie-off: %v", c.ev, c.path, got, err)
			}
		})
	}
}

// TestDigest_Golden fixes the exact bytes of every case's digest.
func TestDigest_Golden(t *testing.T) {
	for _, c := range testCases {
		t.Run(c.name, func(t *testing.T) {
			got := runDigest(c)
			file := filepath.Join("testdata", c.name+".golden")
			if *updateDigest {
				if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test -run TestDigest_Golden -update-digest to create it)", err)
			}
			if got != string(want) {
				t.Errorf("Of(%v, %q) =\n%s\nwant (%s):\n%s", c.ev, c.path, got, file, want)
			}
		})
	}
}

// TestDigest_Deterministic checks that the same input gives the same bytes,
// again and from many goroutines at once.
func TestDigest_Deterministic(t *testing.T) {
	for _, c := range testCases {
		first := runDigest(c)
		var wg sync.WaitGroup
		got := make([]string, 8)
		for i := range got {
			wg.Go(func() { got[i] = runDigest(c) })
		}
		wg.Wait()
		for i, g := range got {
			if g != first {
				t.Errorf("%s: run %d = %q; want %q", c.name, i, g, first)
			}
		}
	}
}

// TestDigest_LineEndingsAndBOMDoNotMatter checks that CRLF, CR and a BOM read
// exactly like LF.
func TestDigest_LineEndingsAndBOMDoNotMatter(t *testing.T) {
	for _, c := range testCases {
		if strings.ContainsAny(c.prev+c.cur, "\r\ufeff") {
			continue
		}
		want := runDigest(c)
		for _, conv := range []func(string) string{
			func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") },
			func(s string) string { return strings.ReplaceAll(s, "\n", "\r") },
			func(s string) string { return "\ufeff" + s },
		} {
			cc := c
			cc.prev, cc.cur = conv(c.prev), conv(c.cur)
			if cc.prev == "\ufeff" {
				cc.prev = ""
			}
			if cc.cur == "\ufeff" {
				cc.cur = ""
			}
			if got := runDigest(cc); got != want {
				t.Errorf("%s: Of(%q, %q) = %q; want %q", c.name, cc.prev, cc.cur, got, want)
			}
		}
	}
}

func TestDigestParse_Counts(t *testing.T) {
	tests := []struct {
		src   string
		words int
		title string
	}{
		{"", 0, "stem"},
		{"one two  three\n", 3, "stem"},
		{"foo*bar* baz", 2, "stem"},
		{"a - b — c | d", 4, "stem"},
		{"日本語です", 5, "stem"},
		{"Go言語 rocks", 4, "stem"},
		{"`code span` here", 3, "stem"},
		{"```\nfenced code\n```\n", 2, "stem"},
		{"[[Foo Bar]] [link text](https://x.example/dest)", 4, "stem"},
		{"<div>\nhtml words\n</div>\n\nprose", 1, "stem"},
		{"![alt words](a.png)", 0, "stem"},
		{"## Second\n\n# First\n", 2, "First"},
		{"## Only h2\n", 2, "Only h2"},
		{"Setext\n======\n", 1, "Setext"},
		{"#\n\n## Real\n", 1, "Real"},
		{"> # In quote\n", 2, "In quote"},
		{"---\n# fm: x\n---\nbody\n", 1, "stem"},
		{"# A \\*b\\* &amp; `c`\n", 4, "A *b* & c"},
	}
	for _, tt := range tests {
		n := parse([]byte(tt.src), "stem")
		if n.words != tt.words || n.title != tt.title {
			t.Errorf("parse(%q) = %d words, title %q; want %d, %q", tt.src, n.words, n.title, tt.words, tt.title)
		}
	}
}

func TestDigestParse_LinksAndTasks(t *testing.T) {
	tests := []struct {
		src   string
		links []string // kind:target
		tasks []string // [ ] or [x] then text
	}{
		{"[a](x) [b](x) [[x]] ![[x]] ![i](x)", []string{"u:x", "w:x", "e:x", "i:x"}, nil},
		{"[[a|b]] [[ spaced ]] [[]] [[a\n]] [[[c]] [[d]e]]", []string{"w:a", "w:spaced", "w:c"}, nil},
		{"*[[emph]]* **![[strong.png]]** \\![[esc-bang]]", []string{"w:emph", "e:strong.png", "w:esc-bang"}, nil},
		{"[see [[inside]]](https://o.example)", []string{"u:https://o.example"}, nil},
		{"www.example.com and me@example.com", []string{"u:http://www.example.com", "u:me@example.com"}, nil},
		{"- [ ] open\n- [x] done *em*\n  - [ ] nested\n- not a task\n", nil, []string{"[ ] open", "[x] done em", "[ ] nested"}},
		{"1. [ ] ordered\n\n> - [X] quoted [[q]]\n", []string{"w:q"}, []string{"[ ] ordered", "[x] quoted [[q]]"}},
		{"- [ ]\n- [x]   \n", nil, []string{"[ ] ", "[x] "}},
		{"\\[[no]] \\\\[[yes]] [[a[[b]] [[c]d]] [[e]] \\![[f]]", []string{"w:yes", "w:b", "w:e", "w:f"}, nil},
	}
	for _, tt := range tests {
		n := parse([]byte(tt.src), "stem")
		var links, tasks []string
		for _, l := range n.links {
			links = append(links, string(rune(l.kind))+":"+l.target)
		}
		for _, tk := range n.tasks {
			mark := "[ ] "
			if tk.done {
				mark = "[x] "
			}
			tasks = append(tasks, mark+tk.text)
		}
		if !slices.Equal(links, tt.links) || !slices.Equal(tasks, tt.tasks) {
			t.Errorf("parse(%q) = links %q, tasks %q; want %q, %q", tt.src, links, tasks, tt.links, tt.tasks)
		}
	}
}

func TestDigestFrontmatter(t *testing.T) {
	tests := []struct{ src, front string }{
		{"---\na: 1\n---\nbody", "---\na: 1\n---\n"},
		{"---  \na: 1\n...\t\nbody", "---  \na: 1\n...\t\n"},
		{"---\n---\n", "---\n---\n"},
		{"---\na: 1\n---", "---\na: 1\n---"},
		{"---\nno end\n", ""},
		{"----\na\n---\n", ""},
		{"text\n---\na\n---\n", ""},
		{"---", ""},
		{"", ""},
	}
	for _, tt := range tests {
		front, body := splitFrontmatter([]byte(tt.src))
		if string(front) != tt.front || string(front)+string(body) != tt.src {
			t.Errorf("splitFrontmatter(%q) = %q, %q; want front %q", tt.src, front, body, tt.front)
		}
	}
}

func TestDigestInline_ReadsAsLiteral(t *testing.T) {
	for _, s := range inlineSeeds {
		if err := checkLiteral(s); err != nil {
			t.Errorf("inlineText(%q) = %q: %v", s, inlineText(s), err)
		}
	}
}

func TestDigestCode(t *testing.T) {
	tests := []struct{ in, want string }{
		{"x", "`x`"},
		{"a`b", "``a`b``"},
		{"`a``", "``` `a`` ```"},
		{"##", "`##`"},
	}
	for _, tt := range tests {
		if got := codeSpan(tt.in); got != tt.want {
			t.Errorf("codeSpan(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestDigestStem(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a/b/plan.md", "plan"},
		{"plan.MD", "plan"},
		{`win\dir\x.md`, "x"},
		{"dir/.md", ".md"},
		{"", "untitled"},
		{"a/", "untitled"},
	}
	for _, tt := range tests {
		if got := stemOf(tt.in); got != tt.want {
			t.Errorf("stemOf(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

var inlineSeeds = []string{
	"plain", "`code`", "*em* _em_ **b** __b__", "[[wiki]] ![[embed]]", "[link](url) ![img](x)",
	"<b>html</b> <!-- c -->", "a&amp;b &#65; &copy", "# heading", "#tag", "- item", "+ item", "* item",
	"1. one", "12) twelve", "2024. year", "> quote", "~~strike~~", "==hl==", "$math$", "%%comment%%",
	"^block", "| a | b |", "back\\slash\\", "trailing \\", "[ ] task", "---", "===", "tab\there",
	"line\nbreak", "\x00nul\x1besc", "bad\xffutf8", "\u202eevil\u202c", "<https://auto.example>",
	strings.Repeat("x", 200), "  spaced  out  ", "a\\*b", "`", "``", "\\", "[", "!", "<", "&",
}

// checkLiteral renders inlineText(s) at the start of a list item
// with goldmark and checks that it reads as cleanText(s) with no markup.
func checkLiteral(s string) error {
	md := goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.TaskList, extension.Footnote))
	var buf bytes.Buffer
	if err := md.Convert([]byte("- "+inlineText(s)+"\n"), &buf); err != nil {
		return err
	}
	out := buf.String()
	inner, ok := strings.CutPrefix(out, "<ul>\n<li>")
	if ok {
		inner, ok = strings.CutSuffix(inner, "</li>\n</ul>\n")
	}
	if !ok || strings.Contains(inner, "<") {
		return fmt.Errorf("renders as markup: %q", out)
	}
	if got, want := html.UnescapeString(inner), cleanText(s, maxText); got != want {
		return fmt.Errorf("renders as %q; want %q", got, want)
	}
	return nil
}

// checkSafe checks that a digest is fit for a tie-off: valid UTF-8; no
// line that imitates a tie-off header or separator; and, read as Markdown,
// only paragraphs and flat bullet lists of text, with no heading, HTML,
// code block, task checkbox, link, image, wikilink or embed.
func checkSafe(out string) error {
	if !utf8.ValidString(out) {
		return errors.New("invalid UTF-8")
	}
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "---" {
			return fmt.Errorf("line %q", line)
		}
	}
	src := []byte(out)
	doc := markdown().Parse(text.NewReader(src))
	var bad error
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n.(type) {
		case *ast.Document, *ast.Text, *ast.String, *ast.Emphasis, *ast.CodeSpan, *ast.AutoLink:
		case *ast.List:
			if n.Parent().Kind() != ast.KindDocument {
				bad = errors.New("nested list")
			}
		case *ast.Paragraph, *ast.TextBlock:
			if k := n.Parent().Kind(); k != ast.KindDocument && k != ast.KindListItem {
				bad = fmt.Errorf("%s in a %s", n.Kind(), k)
			}
		case *ast.ListItem:
			if _, ok := n.FirstChild().FirstChild().(*extast.TaskCheckBox); ok {
				bad = errors.New("task checkbox")
			}
		default:
			bad = fmt.Errorf("%s node", n.Kind())
		}
		if bad != nil {
			return ast.WalkStop, nil
		}
		return ast.WalkContinue, nil
	})
	if bad != nil {
		return bad
	}
	for _, l := range parse(src, "x").links {
		if l.kind == linkWiki || l.kind == linkEmbed {
			return fmt.Errorf("wikilink %q", l.target)
		}
	}
	return nil
}

func FuzzDigest(f *testing.F) {
	for _, c := range testCases {
		f.Add([]byte(c.prev), []byte(c.cur))
	}
	f.Add([]byte(digestPlanV2), []byte(strings.ReplaceAll(digestPlanV2, "\n", "\r\n")))
	f.Add([]byte("- [ ] a\n"), []byte("* [x] a\n\n1. [ ] a"))
	f.Fuzz(func(t *testing.T, prev, cur []byte) {
		for _, ev := range strand.EventTypes {
			out := Of(ev, "fuzz/note.md", prev, cur)
			if err := checkSafe(out); err != nil {
				t.Fatalf("Of(%v, %q, %q) = %q; unsafe: %v", ev, prev, cur, out, err)
			}
			if again := Of(ev, "fuzz/note.md", prev, cur); again != out {
				t.Fatalf("Of(%v, %q, %q) = %q, then %q", ev, prev, cur, out, again)
			}
		}
		if out := Of(strand.Modified, "n.md", cur, cur); !strings.Contains(out, ": no change to the note's content.") {
			t.Fatalf("Of(Modified, %q, same) = %q; want no change", cur, out)
		}
	})
}

func FuzzDigestInline(f *testing.F) {
	for _, s := range inlineSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if err := checkLiteral(s); err != nil {
			t.Fatalf("inlineText(%q) = %q: %v", s, inlineText(s), err)
		}
	})
}

// benchNote is a note of about size bytes: sections of prose with
// wikilinks, links, tasks and code.
func benchNote(size int) []byte {
	var b bytes.Buffer
	b.WriteString("---\ntags: [bench]\n---\n# Bench note\n\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "## Section %d\n\nSome prose about [[Topic %d]] with a [link](https://example.com/%d) "+
			"and *emphasis*, in a sentence of ordinary length.\n\n- [ ] task %d\n- [x] done %d\n\n"+
			"```go\nfunc f%d() {}\n```\n\n", i, i%50, i, i, i, i)
	}
	return b.Bytes()
}

// BenchmarkDigest_Pathological measures 1 MiB lines built to make a naive
// scanner quadratic: unclosed and nested wikilink brackets.
func BenchmarkDigest_Pathological(b *testing.B) {
	for _, note := range []struct{ name, unit string }{
		{"open-brackets", "[[a"},
		{"nested-brackets", "[[a]b"},
		{"escapes", "\\[[x]]"},
	} {
		src := []byte(strings.Repeat(note.unit, (1<<20)/len(note.unit)) + "]]\n")
		b.Run(note.name+"/goldmark-parse", func(b *testing.B) { // the baseline
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				markdown().Parse(text.NewReader(src))
			}
		})
		b.Run(note.name+"/created", func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				Of(strand.Created, "p.md", nil, src)
			}
		})
	}
}

func BenchmarkDigest(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"1MiB", 1 << 20}} {
		prev := benchNote(size.n)
		cur := bytes.Replace(prev, []byte("- [ ] task 3\n"), []byte("- [x] task 3\n- [ ] new task\n"), 1)
		cur = bytes.Replace(cur, []byte("[[Topic 1]]"), []byte("[[Topic one]] and more"), 1)
		b.Run(size.name+"/goldmark-parse", func(b *testing.B) { // the baseline
			b.SetBytes(int64(len(cur)))
			b.ReportAllocs()
			for b.Loop() {
				markdown().Parse(text.NewReader(cur))
			}
		})
		b.Run(size.name+"/created", func(b *testing.B) {
			b.SetBytes(int64(len(cur)))
			b.ReportAllocs()
			for b.Loop() {
				Of(strand.Created, "bench.md", nil, cur)
			}
		})
		b.Run(size.name+"/modified", func(b *testing.B) {
			b.SetBytes(int64(len(prev) + len(cur)))
			b.ReportAllocs()
			for b.Loop() {
				Of(strand.Modified, "bench.md", prev, cur)
			}
		})
	}
}
