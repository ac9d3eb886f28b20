package conversation

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/bench/internal/table"
	"github.com/knotd/knotd/internal/agentrun/agenttest"
	"github.com/knotd/knotd/internal/agents/claude/claudetest"
	"github.com/knotd/knotd/internal/agents/codex/codextest"
	"github.com/knotd/knotd/internal/agents/gemini/geminitest"
)

func text(s string) agenttest.Block { return agenttest.Block{Type: "text", Text: s} }

func TestConversation_Sizes(t *testing.T) {
	tests := []struct {
		name string
		got  turnSize
		want turnSize
	}{
		{"claude: the last user prompt without reminders; every message's text",
			claudeSize(claudetest.Request{Messages: []agenttest.Message{
				{Role: "user", Content: []agenttest.Block{text("<system-reminder>ctx</system-reminder>"), text("first é")}},
				{Role: "assistant", Content: []agenttest.Block{text("reply")}},
				{Role: "user", Content: []agenttest.Block{text("<system-reminder>x</system-reminder>"), text("second")}},
			}}),
			turnSize{prompt: 6, promptText: "second", conversation: 38 + 7 + 5 + 36 + 6, own: 38 + 36, messages: 3, userTurns: 2}},
		{"claude: no messages", claudeSize(claudetest.Request{}), turnSize{}},
		{"codex: Codex's own context is conversation, not a prompt",
			codexSize(codextest.ResponsesRequest{Instructions: "system prompt", Input: []agenttest.Message{
				{Role: "developer", Content: []agenttest.Block{text("rules")}},
				{Role: "user", Content: []agenttest.Block{text("<environment_context>cwd</environment_context>")}},
				{Role: "user", Content: []agenttest.Block{text("the note")}},
				{Role: "assistant", Content: []agenttest.Block{text("ok")}},
			}}),
			turnSize{prompt: 8, promptText: "the note", conversation: 5 + 46 + 8 + 2, own: 5 + 46, messages: 4, userTurns: 1}},
		{"codex: the model instructions, the first developer message of a request without instructions, are the system prompt",
			codexSize(codextest.ResponsesRequest{Input: []agenttest.Message{
				{Role: "developer", Content: []agenttest.Block{text("You are Codex")}},
				{Role: "developer", Content: []agenttest.Block{text("<permissions instructions>ro"), text("<collaboration_mode>x")}},
				{Role: "user", Content: []agenttest.Block{text("<environment_context>cwd</environment_context>")}},
				{Role: "user", Content: []agenttest.Block{text("the note")}},
			}}),
			turnSize{prompt: 8, promptText: "the note", conversation: 28 + 1 + 21 + 46 + 8, own: 28 + 1 + 21 + 46, messages: 4, userTurns: 1}}, // parts joined by newlines
		{"codex: no messages", codexSize(codextest.ResponsesRequest{}), turnSize{}},
		{"gemini: the session preamble is conversation, not a prompt",
			geminiSize(geminitest.GeminiRequest{Contents: []geminitest.GeminiContent{
				{Role: "user", Texts: []string{"<session_context>env</session_context>"}},
				{Role: "user", Texts: []string{"turn one"}},
				{Role: "model", Texts: []string{"answer"}},
				{Role: "user", Texts: []string{"turn two"}},
			}}),
			turnSize{prompt: 8, promptText: "turn two", conversation: 38 + 8 + 6 + 8, own: 38, messages: 4, userTurns: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %+v; want %+v", tt.got, tt.want)
			}
		})
	}
}

func TestConversation_MainCall(t *testing.T) {
	tests := []struct {
		name   string
		calls  []turnSize
		want   int // conversation of the call picked; -1: none
		wantOK bool
	}{
		{"none", nil, 0, false},
		{"one", []turnSize{{messages: 3, conversation: 1}}, 1, true},
		{"the most messages", []turnSize{{messages: 1, conversation: 1}, {messages: 5, conversation: 2}, {messages: 2, conversation: 3}}, 2, true},
		{"the last of equals", []turnSize{{messages: 4, conversation: 1}, {messages: 4, conversation: 2}}, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := mainCall(tt.calls)
			if ok != tt.wantOK || got.conversation != tt.want {
				t.Errorf("mainCall = %+v, %v; want conversation %d, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestConversation_ReportTurns(t *testing.T) {
	tests := []struct {
		n    int
		want []int
	}{
		{1, []int{1}},
		{3, []int{1, 2, 3}},
		{10, []int{1, 2, 3, 10}},
		{12, []int{1, 2, 3, 10, 12}},
		{50, []int{1, 2, 3, 10, 50}},
	}
	for _, tt := range tests {
		if got := reportTurns(tt.n); !slices.Equal(got, tt.want) {
			t.Errorf("reportTurns(%d) = %v; want %v", tt.n, got, tt.want)
		}
	}
}

func TestConversation_Modes(t *testing.T) {
	tests := []struct {
		hasKey bool
		want   []convMode
	}{
		// Without the key, knotd's only behaviour is whole: run it without the key.
		{false, []convMode{{name: "whole"}}},
		{true, []convMode{{name: "whole", key: "whole"}, {name: "change"}}},
	}
	for _, tt := range tests {
		if got := conversationModes(tt.hasKey); !slices.Equal(got, tt.want) {
			t.Errorf("conversationModes(%v) = %v; want %v", tt.hasKey, got, tt.want)
		}
	}
	for _, tt := range []struct {
		key     string
		wantKey bool
	}{{"", false}, {"whole", true}} {
		cfg := convConfig("claude", "/x/claude", tt.key)
		if got := strings.Contains(cfg, "resume_prompt: whole"); got != tt.wantKey || !strings.Contains(cfg, `command: ["/x/claude"]`) {
			t.Errorf("convConfig(key %q) =\n%s\nwant resume_prompt written: %v", tt.key, cfg, tt.wantKey)
		}
	}
}

// conv makes a result of n turns whose prompt and conversation at turn i
// are prompt(i) and conv(i).
func convRes(cli, mode string, n int, prompt, conv func(int) int) convResult {
	res := convResult{cli: convCLI{name: cli, label: cli}, mode: convMode{name: mode}, sections: n}
	for i := 1; i <= n; i++ {
		res.turns = append(res.turns, turnSize{prompt: prompt(i), conversation: conv(i), userTurns: i})
		res.wall = append(res.wall, time.Second)
	}
	return res
}

func TestConversation_Rows(t *testing.T) {
	whole := convRes("claude", "whole", 10, func(i int) int { return 7000 + 1000*i }, func(i int) int { return 18000 * i })
	goodChange := convRes("claude", "change", 10, func(i int) int { return map[bool]int{true: 7000, false: 2000}[i == 1] }, func(i int) int { return 4000 * i })
	bigPrompt := convRes("claude", "change", 10, func(i int) int { return map[bool]int{true: 2501, false: 2000}[i == 7] }, func(i int) int { return 4000 * i })
	bigConv := convRes("claude", "change", 10, func(int) int { return 2000 }, func(i int) int { return 4600 * i })
	fresh := goodChange
	fresh.fresh = 1
	failed := whole
	failed.failed, failed.firstFailure = 2, "turn 8: failed: empty reply"
	tests := []struct {
		name    string
		results []convResult
		hasKey  bool
		// want maps "metric prefix" to the verdict and figure of its row
		// (figure "" is not compared).
		want map[string][2]string
	}{
		{"before only: figures, no budget; change skipped", []convResult{whole}, false, map[string][2]string{
			"knotd's prompt, turns 1 / 2 / 3 / 10": {table.VerdictInfo, "8,000 / 9,000 / 10,000 / 17,000"},
			"conversation sent, turns 10":          {table.VerdictInfo, "180,000"},
			"largest prompt from turn 3 on":        {table.VerdictInfo, "17,000 (turn 10)"},
			"every save one resumed turn":          {table.VerdictPass, ""},
			"knotd's prompt per turn":              {table.VerdictSkip, "—"},
		}},
		{"goal met", []convResult{whole, goodChange}, true, map[string][2]string{
			"largest prompt from turn 3 on":                  {table.VerdictPass, "2,000 (turn 3)"},
			"conversation at turn 10, against resume_prompt": {table.VerdictPass, "40,000"},
		}},
		{"a prompt over 2,500 after turn 3 fails", []convResult{whole, bigPrompt}, true, map[string][2]string{
			"largest prompt from turn 3 on": {table.VerdictFail, "2,501 (turn 7)"},
		}},
		{"a conversation over a quarter fails", []convResult{whole, bigConv}, true, map[string][2]string{
			"conversation at turn 10, against resume_prompt": {table.VerdictFail, "46,000"},
		}},
		{"a failed run fails, and says the first", []convResult{failed}, false, map[string][2]string{
			"runs that did not end ok":             {table.VerdictFail, "2 (first: turn 8: failed: empty reply)"},
			"knotd's prompt, turns 1 / 2 / 3 / 10": {table.VerdictInfo, "8,000 / 9,000 / 10,000 / 17,000"},
		}},
		{"a fresh turn fails", []convResult{whole, fresh}, true, map[string][2]string{
			"every save one resumed turn": {table.VerdictFail, "1 fresh, 0 without the line; 10 sections"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := convRows(tt.results, tt.hasKey)
			last := tt.results[len(tt.results)-1]
			for prefix, want := range tt.want {
				found := false
				for _, r := range rows {
					if !strings.HasPrefix(r.Metric, prefix) || (want[0] != table.VerdictSkip && !strings.Contains(r.Scenario, last.mode.name)) {
						continue
					}
					found = true
					if r.Verdict != want[0] || (want[1] != "" && r.Knotd != want[1]) {
						t.Errorf("%s: %q, verdict %s; want %q, %s", r.Metric, r.Knotd, r.Verdict, want[1], want[0])
					}
				}
				if !found {
					t.Errorf("no row %q in %s mode; rows: %+v", prefix, last.mode.name, rows)
				}
			}
		})
	}
}

func TestConversation_Markdown(t *testing.T) {
	res := []convResult{
		convRes("claude", "whole", 12, func(i int) int { return 1000 * i }, func(i int) int { return 10000 * i }),
		convRes("codex", "whole", 12, func(i int) int { return 1100 * i }, func(i int) int { return 11000 * i }),
	}
	got := convMarkdown(res)
	want := []string{
		"| agent | resume_prompt | prompt, turn 1 | prompt, turn 2 | prompt, turn 3 | prompt, turn 10 | prompt, turn 12 | conversation, turn 10 | conversation, turn 12 |",
		"| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
		"| claude | whole | 1,000 | 2,000 | 3,000 | 10,000 | 12,000 | 100,000 | 120,000 |",
		"| codex | whole | 1,100 | 2,200 | 3,300 | 11,000 | 13,200 | 110,000 | 132,000 |",
	}
	if lines := strings.Split(got, "\n"); !slices.Equal(lines[len(lines)-4:], want) {
		t.Errorf("convMarkdown =\n%s\nwant it to end with\n%s", got, strings.Join(want, "\n"))
	}
}

func TestConversation_Texts(t *testing.T) {
	// The sizes of issue 24's measurement: a 6.3 KB note, 1.6 KB replies,
	// one line per save.
	tests := []struct {
		name     string
		n        int
		min, max int
	}{
		{"note", len(meetingNote), 6200, 6500},
		{"reply", len(agentReply(7)), 1500, 1700},
		{"line", len(followUpLine(7)), 40, 120},
	}
	for _, tt := range tests {
		if tt.n < tt.min || tt.n > tt.max {
			t.Errorf("%s: %d bytes; want %d to %d", tt.name, tt.n, tt.min, tt.max)
		}
	}
	if followUpLine(2) == followUpLine(3) || !strings.HasSuffix(followUpLine(2), "\n") || strings.Count(followUpLine(2), "\n") != 1 {
		t.Errorf("followUpLine: want one distinct line per save, got %q, %q", followUpLine(2), followUpLine(3))
	}
}

func TestStandInTB_StopsAndCleansUp(t *testing.T) {
	tests := []struct {
		name    string
		call    func(tb *standInTB)
		wantErr error // nil: no error; errSkipped: a skip
		wantMsg string
	}{
		{"fatal", func(tb *standInTB) { tb.Fatalf("broke %d", 1) }, errors.New(""), "broke 1"},
		{"skip", func(tb *standInTB) { tb.Skipf("no %s", "cli") }, errSkipped, "no cli"},
		{"nothing", func(*standInTB) {}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var order []int
			tb := newStandInTB(t.Logf)
			tb.Cleanup(func() { order = append(order, 1) })
			tb.Cleanup(func() { order = append(order, 2) })
			err := func() (err error) {
				defer catchTB(&err)
				tt.call(tb)
				return nil
			}()
			tb.close()
			switch {
			case tt.wantErr == nil && err != nil, tt.wantErr != nil && err == nil:
				t.Fatalf("err = %v; want %v", err, tt.wantErr)
			case err != nil && (!strings.Contains(err.Error(), tt.wantMsg) || errors.Is(err, errSkipped) != (tt.wantErr == errSkipped)):
				t.Errorf("err = %v; want %q, skipped %v", err, tt.wantMsg, tt.wantErr == errSkipped)
			}
			if !slices.Equal(order, []int{2, 1}) {
				t.Errorf("cleanups ran %v; want the last first, once each", order)
			}
		})
	}
}
