// Package conversation is the bench's conversation scenario (issue 24):
// knotd --once driving the real Claude Code, Codex and Gemini CLIs, each
// against a loopback stand-in of its API, through a meeting note saved
// one line at a time, and the size of knotd's prompt and of the
// conversation each CLI sent, turn by turn.
package conversation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/knotd/knotd/bench/internal/agentruns"
	"github.com/knotd/knotd/bench/internal/knotdlog"
	"github.com/knotd/knotd/bench/internal/stats"
	"github.com/knotd/knotd/bench/internal/table"
	"github.com/knotd/knotd/internal/agents/claude/claudetest"
	"github.com/knotd/knotd/internal/agents/codex/codextest"
	"github.com/knotd/knotd/internal/agents/gemini/geminitest"
)

// knotdHasResumePrompt says whether the knotd being measured knows the
// agent key resume_prompt (it does since issue 24; false measures a
// checkout from before it, whose only behaviour is "whole") (issue 24 §1: "change", the default, sends a
// resumed turn only the change; "whole" sends the whole note and the
// newest tie-off sections every turn, as knotd did before). It is the
// one switch of the conversation scenario's before/after:
//
//   - false: knotd rejects the key, and its only behaviour is "whole".
//     The scenario runs each CLI once, without the key, and reports those
//     rows as the "whole" (before) rows; the "change" rows are skipped.
//   - true: each CLI runs twice in the same run, once with
//     resume_prompt: whole (before) and once without the key, knotd's
//     default (after), and the after rows are judged against issue 24's
//     goal.
const knotdHasResumePrompt = true

// The goal of issue 24 §3, judged on the "change" rows.
const (
	convPromptGoal = 2500 // chars: a prompt from turn 3 on at most this
	convGoalFrom   = 3    // the first turn the prompt goal applies to
	convRatioTurn  = 10   // the turn whose conversation is compared
	convRatioGoal  = 0.25 // change's conversation at convRatioTurn / whole's, at most
)

// convTurnTimeout bounds one save's knotd --once (the CLI retries some API
// errors for minutes).
const convTurnTimeout = 3 * time.Minute

// convMode is one way knotd is configured for a resumed turn.
type convMode struct {
	name string // "whole" (before) or "change" (after)
	// key is the value written as the agent's resume_prompt, or "" to
	// leave the key out (knotd's default).
	key string
}

// conversationModes returns the modes to measure (see knotdHasResumePrompt).
func conversationModes(hasKey bool) []convMode {
	if !hasKey {
		return []convMode{{name: "whole"}}
	}
	return []convMode{{name: "whole", key: "whole"}, {name: "change"}}
}

// turnSize is what one model call of a turn sent, in characters (runes).
type turnSize struct {
	// prompt is knotd's prompt: the text of the conversation's last user
	// message, without what the CLI adds to it (Claude Code's
	// <system-reminder> blocks).
	prompt     int
	promptText string
	// conversation is the text of every message the call sent (all roles,
	// the CLI's own context included): what the model reads besides the
	// system prompt and tool definitions.
	conversation int
	// own is the part of conversation that is neither knotd's prompts nor
	// the model's replies: what the CLI adds to the conversation itself
	// (Claude Code's <system-reminder> blocks, Codex's developer
	// instructions and environment context, Gemini's session context).
	own int
	// messages counts the call's messages; userTurns those that are the
	// user's prompts (one per turn of a continued conversation).
	messages, userTurns int
}

// chars counts the characters of s.
func chars(s string) int { return utf8.RuneCountInString(s) }

// claudeSize measures a Messages API call of Claude Code.
func claudeSize(r claudetest.Request) turnSize {
	t := turnSize{messages: len(r.Messages)}
	for _, m := range r.Messages {
		for _, b := range m.Content {
			t.conversation += chars(b.Text)
		}
	}
	var replies []string
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			replies = append(replies, m.Text())
		}
	}
	return t.withPrompts(r.UserPrompts(), replies)
}

// withPrompts sets the fields of t that come from the call's user prompts
// (knotd's, oldest first) and the model's replies.
func (t turnSize) withPrompts(prompts, replies []string) turnSize {
	t.userTurns = len(prompts)
	if len(prompts) > 0 {
		t.promptText = prompts[len(prompts)-1]
		t.prompt = chars(t.promptText)
	}
	t.own = t.conversation
	for _, s := range slices.Concat(prompts, replies) {
		t.own -= chars(s)
	}
	t.own = max(t.own, 0)
	return t
}

// codexSize measures a Responses API call of Codex. Codex CLI 0.169.0
// sends no instructions: its model instructions, the system prompt (21,769
// chars for its default model), are the first message of the input, a
// developer message, sent unchanged at every turn. That message is left out
// of the conversation, as the system prompts of Claude Code (system) and
// Gemini CLI (systemInstruction) are; a request with instructions keeps all
// its messages.
func codexSize(r codextest.ResponsesRequest) turnSize {
	t := turnSize{messages: len(r.Input)}
	in := r.Input
	if r.Instructions == "" && len(in) > 0 && in[0].Role == "developer" {
		in = in[1:]
	}
	for _, m := range in {
		t.conversation += chars(m.Text())
	}
	return t.withPrompts(r.UserPrompts(), r.Texts("assistant"))
}

// geminiSize measures a generate call of Gemini CLI.
func geminiSize(r geminitest.GeminiRequest) turnSize {
	t := turnSize{messages: len(r.Contents)}
	for _, c := range r.Contents {
		for _, s := range c.Texts {
			t.conversation += chars(s)
		}
	}
	var replies []string
	for _, c := range r.Contents {
		if c.Role == "model" {
			replies = append(replies, c.Texts...)
		}
	}
	return t.withPrompts(r.UserTexts(), replies)
}

// mainCall returns the call of a turn that carried the conversation: the
// one with the most messages (the last of those), or false for none.
func mainCall(calls []turnSize) (turnSize, bool) {
	if len(calls) == 0 {
		return turnSize{}, false
	}
	best := calls[0]
	for _, c := range calls[1:] {
		if c.messages >= best.messages {
			best = c
		}
	}
	return best, true
}

// convAgent is a real CLI set up against its API stand-in.
type convAgent struct {
	bin string   // the CLI
	env []string // its environment (hermetic: see agenttest)
	// calls returns the conversation calls the stand-in has received so
	// far, measured, in arrival order.
	calls func() []turnSize
}

// convCLI is one CLI the scenario drives.
type convCLI struct {
	name  string // the preset: claude, codex, gemini
	label string // for the table: "Claude Code 2.1.330"
	setup func(tb *standInTB, dir string) convAgent
}

// conversationCLIs are the CLIs, each against the stand-in of its API,
// which answers every turn with agentReply.
var conversationCLIs = []convCLI{
	{name: "claude", label: "Claude Code " + claudetest.ClaudeVersion, setup: func(tb *standInTB, dir string) convAgent {
		bin := claudetest.ClaudeCLI(tb)
		s := claudetest.NewAnthropic(tb)
		s.SetReply(func(r claudetest.Request) string { return agentReply(len(r.UserPrompts())) })
		return convAgent{bin: bin, env: s.ClaudeEnv(mkdir(tb, dir, "home")), calls: func() []turnSize {
			var out []turnSize
			for _, r := range s.MessageRequests() {
				out = append(out, claudeSize(r))
			}
			return out
		}}
	}},
	{name: "codex", label: "Codex " + codextest.CodexVersion, setup: func(tb *standInTB, dir string) convAgent {
		bin := codextest.CodexCLI(tb)
		s := codextest.NewOpenAI(tb)
		s.SetReply(func(r codextest.ResponsesRequest) string { return agentReply(len(r.UserPrompts())) })
		return convAgent{bin: bin, env: s.CodexEnv(tb, dir), calls: func() []turnSize {
			var out []turnSize
			for _, r := range s.ResponseRequests() {
				out = append(out, codexSize(r))
			}
			return out
		}}
	}},
	{name: "gemini", label: "Gemini CLI " + geminitest.GeminiVersion, setup: func(tb *standInTB, dir string) convAgent {
		bin := geminitest.GeminiCLI(tb)
		s := geminitest.NewGemini(tb)
		s.SetReply(func(r geminitest.GeminiRequest) string { return agentReply(len(r.UserTexts())) })
		return convAgent{bin: bin, env: s.GeminiEnv(mkdir(tb, dir, "home"), false), calls: func() []turnSize {
			var out []turnSize
			for _, r := range s.ChatRequests() {
				out = append(out, geminiSize(r))
			}
			return out
		}}
	}},
}

// CLINames names the CLIs of conversationCLIs, in order.
func CLINames() []string {
	names := make([]string, len(conversationCLIs))
	for i, c := range conversationCLIs {
		names[i] = c.name
	}
	return names
}

// mkdir makes dir/name and returns it; it fails tb if it cannot.
func mkdir(tb *standInTB, dir, name string) string {
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(p, 0o700); err != nil {
		tb.Fatalf("conversation: %v", err)
	}
	return p
}

// convResult is one CLI's conversation in one mode.
type convResult struct {
	cli      convCLI
	mode     convMode
	turns    []turnSize      // turn i+1's main call
	wall     []time.Duration // each turn's knotd --once
	fresh    int             // turns whose call did not continue the conversation
	noLine   int             // saves whose new line the prompt lacked
	sections int             // tie-off sections after the last turn
	failed   int             // turns whose run did not end ok
	// firstFailure is the first of them: turn, outcome and reason.
	firstFailure string
}

// Harness is what the scenario needs from the bench.
type Harness struct {
	Knotd string   // the knotd binary
	CLIs  []string // the CLIs to drive (names of CLINames)
	Turns int      // turns per CLI
	// Logf reports progress.
	Logf func(format string, args ...any)
	// Path returns a fresh path in the bench's temporary directory.
	Path func(name string) string
}

// Run measures issue 24 §3: for each CLI and mode, knotd --once
// on a vault of one meeting note of 6.3 KB, turn 1 the new note, then
// -turns minus one saves that each append one line, with the real CLI
// against its API stand-in; per turn the size of knotd's prompt and of the
// conversation the CLI sent. It returns the table's rows and the notes
// printed under it.
func Run(ctx context.Context, h Harness) (rows []table.Row, notes []string, err error) {
	var results []convResult
	for _, cli := range conversationCLIs {
		if !slices.Contains(h.CLIs, cli.name) {
			continue
		}
		for _, mode := range conversationModes(knotdHasResumePrompt) {
			if ctx.Err() != nil {
				return rows, nil, context.Cause(ctx)
			}
			h.Logf("conversation: %s, resume_prompt %s, %d turns", cli.name, mode.name, h.Turns)
			start := time.Now()
			res, err := h.converse(ctx, cli, mode, h.Turns)
			switch {
			case errors.Is(err, errSkipped):
				rows = append(rows, table.SkipRow(convScenario(cli, mode), "knotd's prompt per turn", table.FirstLine(strings.TrimSpace(err.Error()))))
				continue
			case err != nil:
				h.Logf("conversation: %s, resume_prompt %s failed: %v", cli.name, mode.name, err)
				rows = append(rows, table.NewRow(convScenario(cli, mode), "error", "—").Check(false, table.FirstLine(err.Error())))
				continue
			}
			h.Logf("conversation: %s, resume_prompt %s: %s", cli.name, mode.name, time.Since(start).Round(time.Second))
			results = append(results, res)
		}
	}
	rows = append(rows, convRows(results, knotdHasResumePrompt)...)
	if len(results) > 0 {
		notes = append(notes, convMarkdown(results))
	}
	return rows, notes, nil
}

func convScenario(cli convCLI, mode convMode) string {
	return fmt.Sprintf("conversation, %s, resume_prompt: %s", cli.label, mode.name)
}

// converse runs one CLI's conversation in one mode.
func (h Harness) converse(ctx context.Context, cli convCLI, mode convMode, turns int) (res convResult, err error) {
	res = convResult{cli: cli, mode: mode}
	dir := h.Path("conversation-" + cli.name + "-" + mode.name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return res, err
	}
	tb := newStandInTB(h.Logf)
	defer tb.close() // the stand-in
	defer catchTB(&err)
	agent := cli.setup(tb, dir)

	vault := mkdir(tb, dir, "vault")
	xdg := mkdir(tb, dir, "xdg")
	config := filepath.Join(dir, "knotd.yaml")
	if err := os.WriteFile(config, []byte(convConfig(cli.name, agent.bin, mode.key)), 0o600); err != nil {
		return res, err
	}
	env := append(slices.Clone(agent.env), "XDG_CONFIG_HOME="+xdg, "XDG_STATE_HOME="+filepath.Join(dir, "state"))
	// once runs knotd --once and returns its wall time and the runs it
	// finished. A failed run is a figure (knotd exits 1 for it), not an
	// error of the harness.
	once := func() (time.Duration, []knotdlog.Line, error) {
		tctx, cancel := context.WithTimeout(ctx, convTurnTimeout)
		defer cancel()
		cmd := exec.CommandContext(tctx, h.Knotd, "--config", config, "--log-format", "json", "--once", vault)
		cmd.Env = env
		cmd.WaitDelay = 10 * time.Second
		log := knotdlog.NewBook()
		cmd.Stderr = log
		start := time.Now()
		out, err := cmd.Output()
		wall := time.Since(start)
		runs := log.Snapshot()
		runs = slices.DeleteFunc(runs, func(l knotdlog.Line) bool { return l.Msg != knotdlog.MsgRunFinished })
		var exit *exec.ExitError
		if err != nil && (len(runs) == 0 || !errors.As(err, &exit) || exit.ExitCode() != 1) {
			return 0, nil, fmt.Errorf("knotd --once: %w\n%s%s", err, lastBytes(out, 2000), log.Tail())
		}
		return wall, runs, nil
	}
	if _, _, err := once(); err != nil { // first contact with the empty vault
		return res, err
	}
	note := filepath.Join(vault, "meetings", "2026-11-20 platform sync.md")
	if err := os.MkdirAll(filepath.Dir(note), 0o755); err != nil {
		return res, err
	}
	seen := 0
	for turn := 1; turn <= turns; turn++ {
		if turn == 1 {
			err = os.WriteFile(note, []byte(meetingNote), 0o644)
		} else {
			err = appendLine(note, followUpLine(turn))
		}
		if err != nil {
			return res, err
		}
		wall, runs, err := once()
		if err != nil {
			return res, fmt.Errorf("turn %d: %w", turn, err)
		}
		if len(runs) != 1 {
			return res, fmt.Errorf("turn %d: knotd --once finished %d runs; want 1", turn, len(runs))
		}
		if runs[0].Outcome != "ok" {
			if res.failed == 0 {
				res.firstFailure = fmt.Sprintf("turn %d: %s: %s", turn, runs[0].Outcome, runs[0].Reason)
				h.Logf("conversation: %s, resume_prompt %s: %s", cli.name, mode.name, res.firstFailure)
			}
			res.failed++
		}
		calls := agent.calls()
		t, ok := mainCall(calls[seen:])
		seen = len(calls)
		if !ok {
			return res, fmt.Errorf("turn %d: %s made no model call", turn, cli.name)
		}
		if t.userTurns != turn {
			res.fresh++
		}
		if turn > 1 && !strings.Contains(t.promptText, strings.TrimSpace(followUpLine(turn))) {
			res.noLine++
		}
		t.promptText = "" // keep the figures only
		res.turns, res.wall = append(res.turns, t), append(res.wall, wall)
	}
	if res.sections, err = agentruns.Sections(strings.TrimSuffix(note, ".md") + ".tieoff.md"); err != nil {
		return res, fmt.Errorf("count the tie-off's sections: %w", err)
	}
	return res, nil
}

// convConfig is knotd's config for the scenario: one agent, the preset
// with the installed CLI, resume_prompt set to key unless key is "".
func convConfig(preset, bin, key string) string {
	cfg := fmt.Sprintf("default_agent: bench\nagents:\n  bench:\n    preset: %s\n    command: [%s]\n    timeout: 2m\n", preset, strconv.Quote(bin))
	if key != "" {
		cfg += "    resume_prompt: " + key + "\n"
	}
	return cfg
}

// appendLine appends line to the file at path, as an editor's save of one
// more line would leave it.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line); err != nil {
		return errors.Join(err, f.Close())
	}
	return f.Close()
}

// reportTurns are the turns the table shows: 1, 2, 3, 10 and the last,
// those the conversation reached.
func reportTurns(n int) []int {
	var out []int
	for _, t := range []int{1, 2, 3, convRatioTurn, n} {
		if t <= n && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// at returns the figure of each turn in ts (1-based) that res reached.
func (res convResult) at(ts []int, f func(turnSize) int) []int {
	var out []int
	for _, t := range ts {
		if t <= len(res.turns) {
			out = append(out, f(res.turns[t-1]))
		}
	}
	return out
}

func slashed(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = stats.Thousands(n)
	}
	return strings.Join(s, " / ")
}

func turnsText(ts []int) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = strconv.Itoa(t)
	}
	return strings.Join(s, " / ")
}

func promptOf(t turnSize) int       { return t.prompt }
func conversationOf(t turnSize) int { return t.conversation }
func ownOf(t turnSize) int          { return t.own }

// maxPromptFrom returns the largest prompt of the turns from turn on, and
// the turn it was sent in (0 when there are none).
func (res convResult) maxPromptFrom(from int) (chars, turn int) {
	for i := from - 1; i < len(res.turns); i++ {
		if i >= 0 && (turn == 0 || res.turns[i].prompt > chars) {
			chars, turn = res.turns[i].prompt, i+1
		}
	}
	return chars, turn
}

// convRows turns the results into the bench table's rows. The "change"
// rows are judged against issue 24's goal: a prompt of at most 2,500
// chars from turn 3 on, and a conversation at turn 10 at most a quarter
// of the "whole" one's of the same CLI in the same run.
func convRows(results []convResult, hasKey bool) []table.Row {
	var rows []table.Row
	whole := map[string]convResult{}
	for _, res := range results {
		if res.mode.name == "whole" {
			whole[res.cli.name] = res
		}
	}
	for _, res := range results {
		scen := convScenario(res.cli, res.mode)
		n := len(res.turns)
		all := reportTurns(n)
		var conv []int
		for _, t := range all {
			if t >= convRatioTurn {
				conv = append(conv, t)
			}
		}
		if len(conv) == 0 {
			conv = []int{n}
		}
		rows = append(rows,
			table.NewRow(scen, "knotd's prompt, turns "+turnsText(all)+" (chars)", slashed(res.at(all, promptOf))),
			table.NewRow(scen, "conversation sent, turns "+turnsText(conv)+" (chars)", slashed(res.at(conv, conversationOf))),
			table.NewRow(scen, "of which the CLI's own messages, turns "+turnsText(conv)+" (chars)", slashed(res.at(conv, ownOf))),
		)
		maxP, maxT := res.maxPromptFrom(convGoalFrom)
		r := table.NewRow(scen, fmt.Sprintf("largest prompt from turn %d on (chars)", convGoalFrom), fmt.Sprintf("%s (turn %d)", stats.Thousands(maxP), maxT))
		if res.mode.name == "change" {
			r = r.Check(maxT > 0 && maxP <= convPromptGoal, fmt.Sprintf("≤ %s", stats.Thousands(convPromptGoal)))
		}
		rows = append(rows, r)
		if w, ok := whole[res.cli.name]; ok && res.mode.name == "change" {
			if n >= convRatioTurn && len(w.turns) >= convRatioTurn {
				c, b := res.turns[convRatioTurn-1].conversation, w.turns[convRatioTurn-1].conversation
				ratio := float64(c) / float64(b)
				rows = append(rows, table.NewRow(scen, fmt.Sprintf("conversation at turn %d, against resume_prompt: whole", convRatioTurn), stats.Thousands(c)).
					WithBase(stats.Thousands(b)+" (whole)", ratio).Check(ratio <= convRatioGoal, fmt.Sprintf("≤ %s×", stats.Format(convRatioGoal))))
			}
		}
		ok := res.fresh == 0 && res.noLine == 0 && res.sections == n
		failRow := table.NewRow(scen, "runs that did not end ok", strconv.Itoa(res.failed)).Check(res.failed == 0, "0")
		if res.failed > 0 {
			failRow.Knotd += " (first: " + res.firstFailure + ")"
		}
		rows = append(rows, failRow,
			table.NewRow(scen, "every save one resumed turn with its new line; tie-off sections", fmt.Sprintf("%d fresh, %d without the line; %d sections", res.fresh, res.noLine, res.sections)).
				Check(ok, fmt.Sprintf("0, 0; %d", n)),
			table.NewRow(scen, "knotd --once per save, median (the CLI's turn included)", stats.Format(stats.Median(msAll(res.wall)))+" ms"),
		)
	}
	if !hasKey {
		for _, res := range results {
			rows = append(rows, table.SkipRow(convScenario(res.cli, convMode{name: "change"}), "knotd's prompt per turn",
				"this knotd has no resume_prompt key: set knotdHasResumePrompt in bench/internal/conversation/conversation.go once it has"))
		}
	}
	return rows
}

func msAll(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = stats.Ms(d)
	}
	return out
}

// convMarkdown is the table the README carries: one line per CLI and
// mode, knotd's prompt at the reported turns and the conversation at turn
// 10 and the last.
func convMarkdown(results []convResult) string {
	n := 0
	for _, res := range results {
		n = max(n, len(res.turns))
	}
	ts := reportTurns(n)
	var conv []int
	for _, t := range ts {
		if t >= convRatioTurn {
			conv = append(conv, t)
		}
	}
	var b strings.Builder
	b.WriteString("Conversation (issue 24), chars per turn: a 6.3 KB meeting note, then one line added per save.\n\n")
	b.WriteString("| agent | resume_prompt |")
	for _, t := range ts {
		fmt.Fprintf(&b, " prompt, turn %d |", t)
	}
	for _, t := range conv {
		fmt.Fprintf(&b, " conversation, turn %d |", t)
	}
	b.WriteString("\n| --- | --- |" + strings.Repeat(" ---: |", len(ts)+len(conv)) + "\n")
	for _, res := range results {
		fmt.Fprintf(&b, "| %s | %s |", table.Cell(res.cli.label), res.mode.name)
		for _, v := range res.at(ts, promptOf) {
			fmt.Fprintf(&b, " %s |", stats.Thousands(v))
		}
		for _, v := range res.at(conv, conversationOf) {
			fmt.Fprintf(&b, " %s |", stats.Thousands(v))
		}
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// lastBytes returns the last n bytes of b, as a string.
func lastBytes(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return "…" + string(b[len(b)-n:])
}
