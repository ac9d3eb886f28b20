package question

import (
	"encoding/json"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// unixPaths skips a test whose cases are written with Unix paths, which
// are not absolute on Windows.
func unixPaths(t *testing.T) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the cases are written with Unix paths")
	}
}

// TestQuestionBody_Edit is the question of docs/formats.md, word for word.
func TestQuestionBody_Edit(t *testing.T) {
	unixPaths(t)
	c := FromClaude("Write", json.RawMessage(`{"file_path":"/v/notes/plan.md","content":"# Plan\n\n- one\n- two, now\n- three\n"}`), "/v")
	c.Why = "I'll update the plan with the third point."
	got := QuestionBody(Ask{ID: "3f9a2c1b", Agent: "claude", Note: "notes/plan.md", Call: c, Current: []byte("# Plan\n\n- one\n- two\n")})
	want := "**claude asks to edit `notes/plan.md`** (Write)\n\n" +
		"> I'll update the plan with the third point.\n\n" +
		"```diff\n--- a/notes/plan.md\n+++ b/notes/plan.md\n@@ -1,4 +1,5 @@\n # Plan\n \n - one\n-- two\n+- two, now\n+- three\n```\n\n" +
		"To answer, add this line to the frontmatter of `plan.md` (in Obsidian: Properties):\n\n" +
		"    knot_answer: approve 3f9a2c1b\n\n" +
		"or `knot_answer: deny 3f9a2c1b <your reason>`. On the machine running knotd: `knotd approve 3f9a2c1b` or `knotd deny 3f9a2c1b --why \"...\"`.\n\n" +
		"A change to the note's text withdraws this question, and knotd runs the change.\n"
	if got != want {
		t.Errorf("QuestionBody =\n%s\nwant\n%s", got, want)
	}
}

// TestQuestionBody shows each kind of call so that it can be judged on a
// small screen, bounded, whatever the call holds.
func TestQuestionBody(t *testing.T) {
	unixPaths(t)
	const root = "/v"
	claude := func(tool, input string) Call { return FromClaude(tool, json.RawMessage(input), root) }
	big := strings.Repeat("line of the file\n", 20000) // 340 KB
	ticks := "code:\n````\nx\n````\n"
	tests := []struct {
		name    string
		ask     Ask
		has     []string // pieces the body holds, in order
		hasNot  []string
		maxSize int // 0: 6000
	}{
		{name: "edit applied to the file", ask: Ask{Call: claude("Edit", `{"file_path":"/v/a.md","old_string":"two","new_string":"2"}`), Current: []byte("one\ntwo\nthree\n")},
			has: []string{"asks to edit `a.md`** (Edit)", "```diff\n", "-two\n+2\n", "```\n"}, hasNot: []string{"only the replaced text"}},
		{name: "edit replacing all", ask: Ask{Call: claude("Edit", `{"file_path":"/v/a.md","old_string":"x","new_string":"y","replace_all":true}`), Current: []byte("x\nx\n")},
			has: []string{"-x\n-x\n+y\n+y\n"}},
		{name: "edit of a file knotd could not read", ask: Ask{Call: claude("Edit", `{"file_path":"/v/a.md","old_string":"two","new_string":"2"}`)},
			has: []string{"(knotd could not read the file: only the replaced text is shown)", "-two\n+2\n"}},
		{name: "edit that would fail", ask: Ask{Call: claude("Edit", `{"file_path":"/v/a.md","old_string":"four","new_string":"4"}`), Current: []byte("one\n")},
			has: []string{"the edit would fail", "-four\n+4\n"}},
		{name: "edit of an ambiguous text", ask: Ask{Call: claude("Edit", `{"file_path":"/v/a.md","old_string":"x","new_string":"y"}`), Current: []byte("x\nx\n")},
			has: []string{"the edit would fail"}},
		{name: "multi-edit in order", ask: Ask{Call: claude("MultiEdit", `{"file_path":"/v/a.md","edits":[{"old_string":"one","new_string":"1"},{"old_string":"1\ntwo","new_string":"1\n2"}]}`), Current: []byte("one\ntwo\n")},
			has: []string{"-one\n-two\n+1\n+2\n"}},
		{name: "write of a new file", ask: Ask{Call: claude("Write", `{"file_path":"/v/new.md","content":"hello\n"}`)},
			has: []string{"asks to edit `new.md`** (Write)", "(a new file, or one knotd could not read: all of it is shown as added)", "+hello\n"}},
		{name: "write that changes nothing", ask: Ask{Call: claude("Write", `{"file_path":"/v/a.md","content":"same\n"}`), Current: []byte("same\n")},
			has: []string{"(the edit changes nothing)"}},
		{name: "edit outside the vault", ask: Ask{Call: claude("Write", `{"file_path":"/etc/hosts","content":"x"}`), Current: []byte("y")},
			has: []string{"asks to edit `/etc/hosts`, outside the vault**", "--- a/etc/hosts"}},
		{name: "an ACP agent's diff", ask: Ask{Agent: "gemini", Call: Call{Tool: "edit", Kind: KindEdit, Path: "a.md", Diff: "--- a/a.md\n+++ b/a.md\n@@ -1 +1 @@\n-a\n+b\n"}},
			has: []string{"**gemini asks to edit `a.md`** (edit)", "```diff\n--- a/a.md\n+++ b/a.md\n@@ -1 +1 @@\n-a\n+b\n```\n"}},
		{name: "a large diff is cut", ask: Ask{Call: claude("Write", `{"file_path":"/v/a.md","content":"`+strings.Repeat(`new line\n`, 2000)+`"}`)},
			has: []string{"```diff\n", "bytes omitted …]\n```\n", "knot_answer: approve"}},
		{name: "a file too large to diff", ask: Ask{Call: claude("Edit", `{"file_path":"/v/a.md","old_string":"line of the file\n","new_string":"x\n","replace_all":true}`), Current: []byte(big)},
			has: []string{"(too large to show as a diff: 340000 bytes now"}},
		{name: "backticks in the file", ask: Ask{Call: claude("Write", `{"file_path":"/v/a.md","content":"`+strings.ReplaceAll(ticks, "\n", `\n`)+`"}`)},
			has: []string{"`````diff\n", "+````\n", "`````\n"}},
		{name: "command", ask: Ask{Call: claude("Bash", `{"command":"rm -rf build && make","description":"rebuild"}`)},
			has: []string{"asks to run a command** (Bash)", "```sh\nrm -rf build && make\n```\n"}},
		{name: "command with backticks", ask: Ask{Call: claude("Bash", "{\"command\":\"echo ```hi``` `date`\"}")},
			has: []string{"````sh\necho ```hi``` `date`\n````\n"}},
		{name: "command too long", ask: Ask{Call: Call{Tool: "Bash", Kind: KindCommand, Command: strings.Repeat("echo x; ", 1000)}},
			has: []string{"bytes omitted …]\n```\n"}},
		{name: "fetch", ask: Ask{Call: claude("WebFetch", `{"url":"https://example.com/a?b=c","prompt":"read"}`)},
			has: []string{"asks to fetch `https://example.com/a?b=c`** (WebFetch)"}},
		{name: "search", ask: Ask{Call: claude("WebSearch", `{"query":"knotd"}`)},
			has: []string{"asks to reach the network** (WebSearch)", "```json\n{\n  \"query\": \"knotd\"\n}\n```\n"}},
		{name: "other tool", ask: Ask{Call: claude("mcp__db__drop", `{"table":"users"}`)},
			has: []string{"asks to use `mcp__db__drop`**\n", "```json\n{\n  \"table\": \"users\"\n}\n```\n"}},
		{name: "other tool with a long input", ask: Ask{Call: claude("X", `{"a":"`+strings.Repeat("y", 5000)+`"}`)},
			has: []string{"bytes omitted …]\n```\n"}},
		{name: "input that is not JSON", ask: Ask{Call: Call{Tool: "X", Input: json.RawMessage("not json ```")}},
			has: []string{"````json\nnot json ```\n````\n"}},
		{name: "a path that would break the line", ask: Ask{Call: Call{Tool: "Write", Kind: KindEdit, Path: "a`b\n## Event: x.md"}},
			has: []string{"edit ``\"a`b\\n## Event: x.md\"``"}, hasNot: []string{"\n## Event"}},
		{name: "a tool name with Markdown", ask: Ask{Call: Call{Tool: "**bold** [x](y)", Kind: KindEdit, Path: "a.md"}},
			has: []string{"(`**bold** [x](y)`)"}},
		{name: "an agent name with Markdown", ask: Ask{Agent: "<b>x</b>*", Call: Call{Tool: "Bash", Kind: KindCommand, Command: "ls"}},
			has: []string{`**\<b\>x\</b\>\* asks to run`}},
		{name: "what the agent said, quoted", ask: Ask{Call: Call{Tool: "Bash", Kind: KindCommand, Command: "ls", Why: "First.\n\n```\nopen fence\n<!-- open\x1b[31m"}},
			has: []string{"> First.\n>\n> ```\n> open fence\n> <!-- open[31m\n\n```sh\n"}},
		{name: "what the agent said, bounded", ask: Ask{Call: Call{Tool: "Bash", Kind: KindCommand, Command: "ls", Why: strings.Repeat("word ", 1000)}},
			has: []string{"bytes omitted …]\n\n```sh"}},
		{name: "machine only", ask: Ask{ID: "3f9a2c1b", Note: "a/b.md", MachineOnly: true, Call: Call{Tool: "Bash", Kind: KindCommand, Command: "ls"}},
			has:    []string{"To answer, on the machine running knotd: `knotd approve 3f9a2c1b` or `knotd deny 3f9a2c1b --why \"...\"`, or the buttons of knotd's console. This vault takes answers only from that machine (`answers_from: machine`): a `knot_answer` written in `b.md` does nothing."},
			hasNot: []string{"    knot_answer:", "Properties"}},
		{name: "no agent name", ask: Ask{Call: Call{Tool: "Bash", Kind: KindCommand, Command: "ls"}}, has: []string{"**the agent asks to run a command**"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.ask.ID == "" {
				tt.ask.ID = "3f9a2c1b"
			}
			if tt.ask.Note == "" {
				tt.ask.Note = "notes/a.md"
			}
			got := QuestionBody(tt.ask)
			rest := got
			for _, h := range tt.has {
				i := strings.Index(rest, h)
				if i < 0 {
					t.Fatalf("QuestionBody =\n%s\nwant it to hold (after the pieces before) %q", got, h)
				}
				rest = rest[i+len(h):]
			}
			for _, h := range tt.hasNot {
				if strings.Contains(got, h) {
					t.Errorf("QuestionBody =\n%s\nholds %q", got, h)
				}
			}
			if limit := 6000; len(got) > limit {
				t.Errorf("QuestionBody is %d bytes; want at most %d", len(got), limit)
			}
		})
	}
}

func TestFromClaude(t *testing.T) {
	unixPaths(t)
	tests := []struct {
		tool, input, root string
		want              Call // without Tool and Input
	}{
		{"Write", `{"file_path":"/v/notes/plan.md","content":"x"}`, "/v", Call{Kind: KindEdit, Path: "notes/plan.md"}},
		{"Edit", `{"file_path":"/v/a.md","old_string":"a","new_string":"b"}`, "/v/", Call{Kind: KindEdit, Path: "a.md"}},
		{"MultiEdit", `{"file_path":"notes/a.md","edits":[]}`, "/v", Call{Kind: KindEdit, Path: "notes/a.md"}},
		{"NotebookEdit", `{"notebook_path":"/v/n.ipynb","new_source":"x"}`, "/v", Call{Kind: KindEdit, Path: "n.ipynb"}},
		{"Write", `{"file_path":"/v/../etc/passwd","content":"x"}`, "/v", Call{Kind: KindEdit, Path: "/v/../etc/passwd", Outside: true}},
		{"Write", `{"file_path":"/vault2/a.md","content":"x"}`, "/vault", Call{Kind: KindEdit, Path: "/vault2/a.md", Outside: true}},
		{"Write", `{"file_path":"../a.md","content":"x"}`, "/v", Call{Kind: KindEdit, Path: "../a.md", Outside: true}},
		{"Write", `{"file_path":"/v/a.md","content":"x"}`, "", Call{Kind: KindEdit, Path: "/v/a.md", Outside: true}},
		{"Write", `{"file_path":7}`, "/v", Call{Kind: KindEdit}},
		{"Write", `not json`, "/v", Call{Kind: KindEdit}},
		{"Bash", `{"command":"git push","description":"push"}`, "/v", Call{Kind: KindCommand, Command: "git push"}},
		{"WebFetch", `{"url":"https://example.com","prompt":"x"}`, "/v", Call{Kind: KindFetch, URL: "https://example.com"}},
		{"WebSearch", `{"query":"q"}`, "/v", Call{Kind: KindFetch}},
		{"Task", `{"prompt":"x"}`, "/v", Call{Kind: KindOther}},
		{"mcp__x__y", `[1,2]`, "/v", Call{Kind: KindOther}},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.input, func(t *testing.T) {
			got := FromClaude(tt.tool, json.RawMessage(tt.input), tt.root)
			if got.Tool != tt.tool || string(got.Input) != tt.input {
				t.Errorf("FromClaude kept tool %q input %s", got.Tool, got.Input)
			}
			got.Tool, got.Input = "", nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("FromClaude(%s, %s, %q) = %+v; want %+v", tt.tool, tt.input, tt.root, got, tt.want)
			}
		})
	}
	// The hash binds the tool and input, not what knotd made of them.
	a := FromClaude("Write", json.RawMessage(`{"file_path":"/v/a.md","content":"x"}`), "/v")
	b := FromClaude("Write", json.RawMessage(`{ "content":"x", "file_path":"/v/a.md" }`), "/w")
	if a.Hash() != b.Hash() {
		t.Error("the same call hashes differently")
	}
}

func TestSummaryAndContextLine(t *testing.T) {
	edit := Call{Tool: "Write", Kind: KindEdit, Path: "notes/plan.md"}
	rm := Call{Tool: "Bash", Kind: KindCommand, Command: "rm -rf x"}
	tests := []struct {
		c       Call
		a       Answer
		summary string
		line    string
	}{
		{edit, Answer{ID: "3f9a2c1b", Verdict: Approve}, "edit notes/plan.md", "3f9a2c1b approved (edit notes/plan.md)"},
		{rm, Answer{ID: "3f9a2c1b", Verdict: Deny, Why: "too risky"}, `run "rm -rf x"`, `3f9a2c1b denied (run "rm -rf x"): too risky`},
		{rm, Answer{ID: "3f9a2c1b", Verdict: Deny, Why: "two\nlines\r\n  here"}, `run "rm -rf x"`, `3f9a2c1b denied (run "rm -rf x"): two lines here`},
		{Call{Kind: KindCommand, Command: "echo a\n## Event: x"}, Answer{ID: "3f9a2c1b", Verdict: Withdraw}, `run "echo a\n## Event: x"`, `3f9a2c1b withdrawn (run "echo a\n## Event: x")`},
		{Call{Kind: KindCommand, Command: strings.Repeat("a", 200)}, Answer{ID: "3f9a2c1b", Verdict: Approve}, `run "` + strings.Repeat("a", 120) + `…"`, `3f9a2c1b approved (run "` + strings.Repeat("a", 120) + `…")`},
		{Call{Tool: "WebFetch", Kind: KindFetch, URL: "https://example.com/x"}, Answer{ID: "3f9a2c1b", Verdict: Approve}, "fetch https://example.com/x", "3f9a2c1b approved (fetch https://example.com/x)"},
		{Call{Tool: "WebSearch", Kind: KindFetch}, Answer{ID: "3f9a2c1b", Verdict: Approve}, "use WebSearch", "3f9a2c1b approved (use WebSearch)"},
		{Call{Tool: "mcp x", Kind: KindOther}, Answer{ID: "3f9a2c1b", Verdict: "maybe"}, `use "mcp x"`, `3f9a2c1b "maybe" (use "mcp x")`},
		{Call{Kind: KindEdit, Path: "/etc/hosts", Outside: true}, Answer{ID: "bad id", Verdict: Approve}, "edit /etc/hosts (outside the vault)", `"bad id" approved (edit /etc/hosts (outside the vault))`},
		{Call{Kind: KindEdit, Path: "my notes/a.md"}, Answer{ID: "3f9a2c1b", Verdict: Approve}, `edit "my notes/a.md"`, `3f9a2c1b approved (edit "my notes/a.md")`},
		{Call{}, Answer{ID: "3f9a2c1b", Verdict: Approve}, "use a tool", "3f9a2c1b approved (use a tool)"},
	}
	for _, tt := range tests {
		if got := Summary(tt.c); got != tt.summary {
			t.Errorf("Summary(%+v) = %q; want %q", tt.c, got, tt.summary)
		}
		got := ContextLine(tt.a, tt.c)
		if got != tt.line {
			t.Errorf("ContextLine(%+v) = %q; want %q", tt.a, got, tt.line)
		}
		if strings.ContainsAny(got, "\r\n") {
			t.Errorf("ContextLine = %q is not one line", got)
		}
	}
}

func TestAnswerBody(t *testing.T) {
	at := time.Date(2026, 11, 21, 19, 30, 5, 0, time.UTC)
	edit := Call{Tool: "Write", Kind: KindEdit, Path: "notes/plan.md"}
	tests := []struct {
		a    Answer
		next string
		want string
	}{
		{Answer{ID: "3f9a2c1b", Verdict: Approve, From: FromNote, At: at}, "knotd continues the run.",
			"**Approved** 3f9a2c1b: edit notes/plan.md, from the note (knot_answer), at 2026-11-21 19:30:05 UTC.\n\nknotd continues the run.\n"},
		{Answer{ID: "3f9a2c1b", Verdict: Deny, Why: "too risky\nreally", From: FromCommand, At: at}, "The agent is told.",
			"**Denied** 3f9a2c1b: edit notes/plan.md, with `knotd deny` on the machine running knotd, at 2026-11-21 19:30:05 UTC.\n\n> too risky\n> really\n\nThe agent is told.\n"},
		{Answer{ID: "3f9a2c1b", Verdict: Withdraw, From: FromKnotd, At: at}, "The note changed before anyone answered; the agent gets the change.",
			"**Withdrawn** 3f9a2c1b: edit notes/plan.md, by knotd, at 2026-11-21 19:30:05 UTC.\n\nThe note changed before anyone answered; the agent gets the change.\n"},
		{Answer{ID: "3f9a2c1b", Verdict: Approve, From: FromConsole}, "",
			"**Approved** 3f9a2c1b: edit notes/plan.md, in knotd's console.\n"},
	}
	for _, tt := range tests {
		if got := AnswerBody(tt.a, edit, tt.next); got != tt.want {
			t.Errorf("AnswerBody(%+v) =\n%q\nwant\n%q", tt.a, got, tt.want)
		}
	}
}
