package agentrun

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	acp "github.com/coder/acp-go-sdk"
	"github.com/knotd/knotd/internal/agentrun/internal/jsonpointer"
	"github.com/knotd/knotd/internal/agentrun/internal/proc"
)

// The recorded output of the agents whose folders are under agents/: the
// runner's tests read it there.
var (
	claudeRecorded = filepath.Join("..", "agents", "claude", "testdata", "recorded")
	codexRecorded  = filepath.Join("..", "agents", "codex", "testdata", "recorded")
	codexWritten   = filepath.Join("..", "agents", "codex", "testdata", "written")
	llmTestdata    = filepath.Join("..", "agents", "llm", "testdata")
	// Gemini CLI 0.61.0's recorded output, headless and in ACP mode, and
	// the gemini output written by hand from its documentation.
	geminiRecorded    = filepath.Join("..", "agents", "gemini", "testdata", "recorded")
	geminiRecordedACP = filepath.Join("..", "agents", "gemini", "testdata", "recorded-acp")
	geminiWritten     = filepath.Join("..", "agents", "gemini", "testdata", "written")
)

func readTestdata(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixtureExit reads a fixture's .exit file ("exit=N").
func fixtureExit(t *testing.T, name string) int {
	t.Helper()
	s := strings.TrimSpace(string(readTestdata(t, name)))
	n, err := strconv.Atoi(strings.TrimPrefix(s, "exit="))
	if err != nil {
		t.Fatalf("%s: %q", name, s)
	}
	return n
}

// recordedDirs are the folders of testdata holding real CLI output, each
// copied unchanged from its recording with a SHA256SUMS made then (see
// testdata/README.md).
var recordedDirs = []string{claudeRecorded, codexRecorded, geminiRecorded, geminiRecordedACP,
	filepath.Join("..", "agents", "claudeacp", "testdata", "recorded"),
	filepath.Join("..", "agents", "codexacp", "testdata", "recorded"),
	filepath.Join("..", "agents", "opencode", "testdata", "recorded")}

// readSums reads a sha256sum listing: file name -> hex sum.
func readSums(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for line := range strings.Lines(strings.TrimSpace(string(b))) {
		sum, name, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("%s: a bad line %q", path, line)
		}
		sums[name] = sum
	}
	return sums
}

// TestRecordedFixtures_Unchanged: the recorded CLI output copied into this
// repository is byte for byte what was recorded, every file of it has its
// sum and every sum its file; the Claude Code files copied on into
// agents/claude/testdata/output too. A fixture edited by hand, or added
// without its sum, fails here.
func TestRecordedFixtures_Unchanged(t *testing.T) {
	check := func(t *testing.T, path, want string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Error(err)
			return
		}
		if got := fmt.Sprintf("%x", sha256.Sum256(b)); got != want {
			t.Errorf("%s is not what was recorded (sha256 %s; recorded %s)", path, got, want)
		}
	}
	for _, dir := range recordedDirs {
		t.Run(filepath.ToSlash(dir), func(t *testing.T) {
			root := dir
			sums := readSums(t, filepath.Join(root, "SHA256SUMS"))
			seen := 0
			err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || d.Name() == "SHA256SUMS" {
					return err
				}
				rel, err := filepath.Rel(root, p)
				if err != nil {
					return err
				}
				want, ok := sums[filepath.ToSlash(rel)]
				if !ok {
					t.Errorf("%s has no recorded sum", p)
					return nil
				}
				seen++
				check(t, p, want)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if seen != len(sums) {
				t.Errorf("%s: %d files for %d sums: a recorded file is missing", root, seen, len(sums))
			}
		})
	}
	t.Run("transcript", func(t *testing.T) {
		sums := readSums(t, filepath.Join(claudeRecorded, "SHA256SUMS"))
		files, err := filepath.Glob(filepath.Join("..", "agents", "claude", "testdata", "output", "*"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no fixtures in agents/claude/testdata/output (%v)", err)
		}
		for _, f := range files {
			if want, ok := sums[filepath.Base(f)]; ok {
				check(t, f, want)
			} // else written by hand, as its README says
		}
	})
}

func TestClaudeParser_Fixtures(t *testing.T) {
	tests := []struct {
		file   string
		reply  string
		handle string
		usage  *Usage
		err    bool
	}{
		{file: "json-new-session.json", reply: "MOCK REPLY (user messages seen: 1)", handle: "11111111-2222-4333-8444-555555555555",
			usage: &Usage{InputTokens: 10, OutputTokens: 8, CostUSD: 0.00019999999999999998}},
		{file: "json-resume.json", reply: "MOCK REPLY (user messages seen: 2)", handle: "11111111-2222-4333-8444-555555555555",
			usage: &Usage{InputTokens: 10, OutputTokens: 8, CostUSD: 0.00039999999999999996}},
		{file: "stream-json-new.jsonl", reply: "MOCK REPLY (user messages seen: 1)", handle: "21111111-2222-4333-8444-555555555555",
			usage: &Usage{InputTokens: 10, OutputTokens: 8, CostUSD: 0.00019999999999999998}},
		{file: "text.out", err: true},
	}
	for _, dir := range []string{claudeRecorded} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			for _, tt := range tests {
				out, err := os.ReadFile(filepath.Join(dir, tt.file))
				if err != nil {
					t.Fatal(err)
				}
				p, err := claudeDriver().parser().finish(out, false, "")
				if (err != nil) != tt.err {
					t.Fatalf("finish(%s) error = %v; want error %v", tt.file, err, tt.err)
				}
				if p.reply != tt.reply || p.handle != tt.handle || p.agentErr != "" {
					t.Errorf("finish(%s) = reply %q handle %q err %q; want %q %q", tt.file, p.reply, p.handle, p.agentErr, tt.reply, tt.handle)
				}
				if tt.usage != nil && (p.usage == nil || *p.usage != *tt.usage) {
					t.Errorf("finish(%s) usage = %+v; want %+v", tt.file, p.usage, tt.usage)
				}
			}
		})
	}
	if _, err := claudeDriver().parser().finish(nil, false, ""); !errors.Is(err, errNoOutput) {
		t.Errorf("finish(empty) = %v; want errNoOutput", err)
	}
}

func TestClaudeParser_ErrorResult(t *testing.T) {
	out := []byte(`{"type":"result","subtype":"success","is_error":true,"result":"API Error: 401 invalid x-api-key","session_id":"x"}` + "\n")
	p, err := claudeDriver().parser().finish(out, false, "")
	if err != nil || p.agentErr != "API Error: 401 invalid x-api-key" || p.reply == "" {
		t.Errorf("finish(is_error) = %+v, %v; want the result as the agent's error", p, err)
	}
	p, err = claudeDriver().parser().finish([]byte(`{"type":"result","subtype":"error_max_turns","is_error":false,"session_id":"x"}`), false, "")
	if err != nil || p.agentErr != "Claude reported error_max_turns" {
		t.Errorf("finish(error_max_turns) = %+v, %v", p, err)
	}
}

func TestClaudeDriver_SessionLost(t *testing.T) {
	tests := []struct {
		name   string
		exit   int
		stderr string
		reply  string
		lost   bool
		reason string
	}{
		{name: "in use fixture", exit: fixtureExit(t, filepath.Join(claudeRecorded, "json-session-in-use.exit")), stderr: string(readTestdata(t, filepath.Join(claudeRecorded, "json-session-in-use.stderr"))),
			lost: true, reason: "Error: Session ID 11111111-2222-4333-8444-555555555555 is already in use."},
		{name: "missing fixture", exit: fixtureExit(t, filepath.Join(claudeRecorded, "json-resume-missing.exit")), stderr: string(readTestdata(t, filepath.Join(claudeRecorded, "json-resume-missing.stderr"))),
			lost: true, reason: "No conversation found with session ID: 99999999-2222-4333-8444-555555555555"},
		{name: "success", exit: 0, stderr: "No conversation found"},
		{name: "other failure", exit: 1, stderr: "Error: Invalid API key"},
		{name: "a reply was printed", exit: 1, stderr: "is already in use", reply: "API Error"},
	}
	for _, tt := range tests {
		reason, lost := claudeDriver().sessionLost(tt.exit, parsed{reply: tt.reply}, tt.stderr)
		if lost != tt.lost || reason != tt.reason {
			t.Errorf("%s: sessionLost = %q, %v; want %q, %v", tt.name, reason, lost, tt.reason, tt.lost)
		}
	}
}

func TestDrivers_Argv(t *testing.T) {
	req := promptRequest(1, "x")
	req.Vault, req.StateDir = "/v", "/state"
	sess := testSession
	ro := []string{"--setting-sources", "user", "--permission-mode", "dontAsk"}
	claude := []string{"claude", "-p", "--output-format", "stream-json", "--verbose"}
	codex := []string{"codex", "exec", "--json", "--skip-git-repo-check", "-s"}
	cat := func(parts ...[]string) []string { return slices.Concat(parts...) }
	capped := *req
	capped.MaxCostUSD = 0.25
	tests := []struct {
		name string
		d    driver
		a    attempt
		want []string
	}{
		{"claude new", claudeDriver(), attempt{program: []string{"claude"}, session: sess},
			cat(claude, ro, []string{"--session-id", sess})},
		{"claude with a cost cap", claudeDriver(), attempt{program: []string{"claude"}, session: sess, req: &capped},
			cat(claude, ro, []string{"--session-id", sess, "--max-budget-usd", "0.25"})},
		{"codex ignores the cap", codexDriver(), attempt{program: []string{"codex"}, req: &capped},
			cat(codex, []string{"read-only", "-"})},
		{"claude resume", claudeDriver(), attempt{program: []string{"claude"}, session: sess, resume: "h-1", model: "sonnet", instructions: "- be brief"},
			cat(claude, ro, []string{"--resume", "h-1", "--model", "sonnet", "--append-system-prompt=- be brief"})},
		{"claude via npx", claudeDriver(), attempt{program: []string{"npx", "@anthropic-ai/claude-code"}, session: sess},
			cat([]string{"npx", "@anthropic-ai/claude-code"}, claude[1:], ro, []string{"--session-id", sess})},
		{"codex new", codexDriver(), attempt{program: []string{"codex"}},
			cat(codex, []string{"read-only", "-"})},
		{"codex resume", codexDriver(), attempt{program: []string{"codex"}, resume: "t-1", model: "gpt-5", instructions: "Say \"hi\"\n"},
			cat(codex, []string{"read-only", "--model", "gpt-5", "-c", `developer_instructions="Say \"hi\"\n"`, "resume", "t-1", "-"})},
		{"gemini new", geminiDriver(), attempt{program: []string{"gemini"}, instructions: "ignored: inline"},
			[]string{"gemini", "--acp", "--approval-mode", "default"}},
		{"gemini resume", geminiDriver(), attempt{program: []string{"gemini"}, resume: "g-1", model: "gemini-2.5-pro"},
			[]string{"gemini", "--acp", "--approval-mode", "default", "--model", "gemini-2.5-pro"}},
		{"llm new", newDriver(&Agent{}, PresetLLM), attempt{program: []string{"llm"}},
			[]string{"llm", "prompt", "-d", filepath.Join("/state", "llm", sess+".db"), "--log"}},
		{"llm resume", newDriver(&Agent{}, PresetLLM), attempt{program: []string{"llm"}, resume: "c-1", model: "gpt-4o", instructions: "-x"},
			[]string{"llm", "prompt", "-d", filepath.Join("/state", "llm", sess+".db"), "--log", "-m", "gpt-4o", "--system=-x", "--cid", "c-1"}},
		{"ollama", newDriver(&Agent{}, PresetOllama), attempt{program: []string{"ollama"}, model: "llama3.2"},
			[]string{"ollama", "run", "--hidethinking", "llama3.2"}},
	}
	for _, tt := range tests {
		a := tt.a
		if a.req == nil {
			a.req = req
		}
		got, err := tt.d.argv(&a)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s: argv = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

// TestDrivers_ArgvPermissions: each permission level's flags, on new and
// resumed turns alike.
func TestDrivers_ArgvPermissions(t *testing.T) {
	req := promptRequest(1, "x")
	sess := testSession
	ro := []string{"--setting-sources", "user", "--permission-mode", "dontAsk"}
	edit := []string{"--setting-sources", "user", "--permission-mode", "acceptEdits", "--permission-prompts", "none"}
	full := []string{"--setting-sources", "user", "--permission-mode", "bypassPermissions"}
	claude := []string{"claude", "-p", "--output-format", "stream-json", "--verbose"}
	codex := []string{"codex", "exec", "--json", "--skip-git-repo-check", "-s"}
	cat := func(parts ...[]string) []string { return slices.Concat(parts...) }
	tests := []struct {
		name string
		d    driver
		a    attempt
		perm Permissions
		want []string
	}{
		{"claude new read-only", claudeDriver(), attempt{program: []string{"claude"}, session: sess}, PermReadOnly, cat(claude, ro, []string{"--session-id", sess})},
		{"claude resume read-only", claudeDriver(), attempt{program: []string{"claude"}, session: sess, resume: "h-1"}, PermReadOnly, cat(claude, ro, []string{"--resume", "h-1"})},
		{"claude new edit", claudeDriver(), attempt{program: []string{"claude"}, session: sess}, PermEdit, cat(claude, edit, []string{"--session-id", sess})},
		{"claude resume edit", claudeDriver(), attempt{program: []string{"claude"}, session: sess, resume: "h-1"}, PermEdit, cat(claude, edit, []string{"--resume", "h-1"})},
		{"claude new full", claudeDriver(), attempt{program: []string{"claude"}, session: sess}, PermFull, cat(claude, full, []string{"--session-id", sess})},
		{"claude resume full", claudeDriver(), attempt{program: []string{"claude"}, session: sess, resume: "h-1"}, PermFull, cat(claude, full, []string{"--resume", "h-1"})},
		{"codex new read-only", codexDriver(), attempt{program: []string{"codex"}}, PermReadOnly, cat(codex, []string{"read-only", "-"})},
		{"codex resume read-only", codexDriver(), attempt{program: []string{"codex"}, resume: "t-1"}, PermReadOnly,
			cat(codex, []string{"read-only", "resume", "t-1", "-"})},
		{"codex new edit", codexDriver(), attempt{program: []string{"codex"}}, PermEdit, cat(codex, []string{"workspace-write", "-c", "sandbox_workspace_write.exclude_slash_tmp=true", "-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true", "-"})},
		{"codex resume edit", codexDriver(), attempt{program: []string{"codex"}, resume: "t-1"}, PermEdit,
			cat(codex, []string{"workspace-write", "-c", "sandbox_workspace_write.exclude_slash_tmp=true", "-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true", "resume", "t-1", "-"})},
		{"codex new full", codexDriver(), attempt{program: []string{"codex"}}, PermFull, cat(codex, []string{"danger-full-access", "-"})},
		{"codex resume full", codexDriver(), attempt{program: []string{"codex"}, resume: "t-1"}, PermFull,
			cat(codex, []string{"danger-full-access", "resume", "t-1", "-"})},
	}
	for _, tt := range tests {
		a := tt.a
		r := *req
		r.Agent.Permissions = tt.perm
		a.req = &r
		got, err := tt.d.argv(&a)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s: argv = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

// codexParse feeds a fixture to a codexParser line by line, as proc.Run does.
func codexParse(t testing.TB, out []byte) (parsed, error) {
	t.Helper()
	p := codexDriver().parser().(lineParser)
	proc.EachLine(out, DefaultMaxLine, p.line)
	return p.finish(out, false, "")
}

func TestCodexParser_Fixtures(t *testing.T) {
	tests := []struct {
		file, reply, handle, agentErr string
		usage                         *Usage
	}{
		{file: "exec-new.jsonl", reply: "Your plan has two items.\n\n- buy milk\n- write knotd", handle: "0199a213-81c0-7800-8aa1-bbab2a035a53",
			usage: &Usage{InputTokens: 24763, CacheReadTokens: 24448, OutputTokens: 122}},
		{file: "exec-resume.jsonl", reply: `You checked off "write knotd". One item left.`, handle: "0199a213-81c0-7800-8aa1-bbab2a035a53",
			usage: &Usage{InputTokens: 25010, CacheReadTokens: 24704, OutputTokens: 18}},
		{file: "exec-turn-failed.jsonl", handle: "0199a213-81c0-7800-8aa1-bbab2a035a53",
			agentErr: "unexpected status 401 Unauthorized: Missing bearer or basic authentication in header"},
	}
	for _, tt := range tests {
		p, err := codexParse(t, readTestdata(t, filepath.Join(codexWritten, tt.file)))
		if err != nil || p.reply != tt.reply || p.handle != tt.handle || p.agentErr != tt.agentErr {
			t.Errorf("parse(%s) = %+v, %v; want reply %q handle %q error %q", tt.file, p, err, tt.reply, tt.handle, tt.agentErr)
		}
		if (tt.usage == nil) != (p.usage == nil) || tt.usage != nil && *p.usage != *tt.usage {
			t.Errorf("parse(%s) usage = %+v; want %+v", tt.file, p.usage, tt.usage)
		}
	}
	if _, err := codexParse(t, nil); !errors.Is(err, errNoOutput) {
		t.Errorf("parse(empty) = %v; want errNoOutput", err)
	}
	p, err := codexParse(t, []byte("warning: config.toml is old\n"+string(readTestdata(t, filepath.Join(codexWritten, "exec-resume.jsonl")))))
	if err != nil || p.reply == "" || len(p.notes) != 1 {
		t.Errorf("parse(warning + events) = %+v, %v; want the reply and a note", p, err)
	}
}

// TestLLMDriver_ReadsConversationFromLogs runs agents/llm's Finish through
// the runner's driver: the helper process's result reaches it, what it read
// comes back.
func TestLLMDriver_ReadsConversationFromLogs(t *testing.T) {
	req := promptRequest(1, "x")
	req.Vault, req.StateDir = "/v", "/state"
	a := &attempt{req: req, program: []string{"llm"}}
	var gotArgv []string
	p := parsed{reply: "Hello!"}
	llmDriver := newDriver(&req.Agent, PresetLLM).(finisher)
	llmDriver.finish(context.Background(), a, &p, func(_ context.Context, argv []string) proc.Result {
		gotArgv = argv
		return proc.Result{Stdout: readTestdata(t, filepath.Join(llmTestdata, "logs-list.json"))}
	})
	wantArgv := []string{"llm", "logs", "list", "-n", "1", "--json", "-d", filepath.Join("/state", "llm", testSession+".db")}
	if !slices.Equal(gotArgv, wantArgv) {
		t.Errorf("logs argv = %q; want %q", gotArgv, wantArgv)
	}
	if p.handle != "01jm8ec74taftdgj2t4zra9z0j" || p.usage == nil || *p.usage != (Usage{InputTokens: 8, OutputTokens: 12}) {
		t.Errorf("after logs: handle %q usage %+v", p.handle, p.usage)
	}

	p = parsed{reply: "Hello!"}
	llmDriver.finish(context.Background(), a, &p, func(context.Context, []string) proc.Result {
		return proc.Result{ExitCode: 2, Stderr: "Error: No such option: -d"}
	})
	if p.handle != "" || len(p.notes) != 1 || !strings.Contains(p.notes[0], "exit status 2") {
		t.Errorf("failed logs call: handle %q notes %q; want no handle and a note", p.handle, p.notes)
	}
}

func TestJSONParser(t *testing.T) {
	reply, _ := jsonpointer.Parse("/answer/text")
	session, _ := jsonpointer.Parse("/conversation")
	p := jsonParser{reply: reply, session: session}
	tests := []struct {
		name, out, reply, handle string
		err                      bool
	}{
		{name: "document", out: `{"answer": {"text": "hi"}, "conversation": "c-1"}`, reply: "hi", handle: "c-1"},
		{name: "pretty", out: "{\n  \"answer\": {\n    \"text\": \"hi\"\n  }\n}\n", reply: "hi"},
		{name: "lines, last wins", out: "{\"answer\": {\"text\": \"a\"}, \"conversation\": \"c-1\"}\nnot json\n{\"answer\": {\"text\": \"b\"}}\n{\"type\": \"done\"}\n",
			reply: "b", handle: "c-1"},
		{name: "numbers as text", out: `{"answer": {"text": 42}, "conversation": 7}`, reply: "42", handle: "7"},
		{name: "missing", out: `{"answer": {}}`, err: true},
		{name: "object", out: `{"answer": {"text": {"a": 1}}}`, err: true},
		{name: "not json", out: "plain text\n", err: true},
		{name: "empty", out: "", err: true},
	}
	for _, tt := range tests {
		got, err := p.finish([]byte(tt.out), false, "")
		if (err != nil) != tt.err || got.reply != tt.reply || got.handle != tt.handle {
			t.Errorf("%s: finish(%q) = %q %q, %v; want %q %q err=%v", tt.name, tt.out, got.reply, got.handle, err, tt.reply, tt.handle, tt.err)
		}
	}
}

// FuzzParsers checks that no parser panics, whatever an agent prints.
func FuzzParsers(f *testing.F) {
	for _, path := range []string{filepath.Join(claudeRecorded, "json-new-session.json"), filepath.Join(claudeRecorded, "stream-json-new.jsonl"),
		filepath.Join(codexWritten, "exec-new.jsonl"), filepath.Join(geminiWritten, "json-new.json"), filepath.Join(geminiWritten, "json-error.json"),
		filepath.Join(llmTestdata, "logs-list.json"), filepath.Join(codexRecorded, "exec-resume-unknown.stderr"),
		filepath.Join(geminiRecorded, "json-resume-unknown.stderr"), filepath.Join(geminiRecordedACP, "acp-load.stdout"),
		filepath.Join(geminiRecordedACP, "acp-write-edit.stdout")} {
		f.Add(readTestdata(f, path))
	}
	f.Add([]byte("{\"type\":\"result\"\n{{{\n\x00\xff"))
	ptr, _ := jsonpointer.Parse("/a/0/b")
	f.Fuzz(func(t *testing.T, out []byte) {
		_, _ = claudeDriver().parser().finish(out, false, string(out))
		_, _ = codexParse(t, out)
		for _, resume := range []string{"", "s-1"} {
			_, _ = talk(geminiDriver(), &attempt{req: &Request{}, prompt: "p", resume: resume}, string(out), string(out))
		}
		_, _ = jsonParser{reply: ptr, session: ptr}.finish(out, false, "")
		_, _ = textParser{}.finish(out, true, "")
		_, _ = parseOutput(claudeDriver(), string(out), string(out)) // line by line, as it streams
		for _, d := range []sessionRecoverer{claudeDriver(), codexDriver(), geminiDriver()} {
			_, _ = d.sessionLost(1, parsed{}, string(out))
		}
		var entry map[string]any
		jsonValues(out, func(v any) { entry, _ = v.(map[string]any) })
		_ = entry
	})
}

func TestJSONValues(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		values  int
		skipped int
	}{
		{"document", `{"a": 1}`, 1, 0},
		{"lines", "{\"a\": 1}\n{\"b\": 2}\n", 2, 0},
		{"pretty", "{\n  \"a\": [\n    1\n  ]\n}\n", 1, 0},
		{"warning first", "warning: x\n{\"a\": 1}\n", 1, 1},
		{"garbage between", "{\"a\": 1}\nnot json\n{\"b\": 2}", 2, 1},
		{"unterminated", "{\"a\": 1}\n{\"b\": ", 1, 1},
		{"empty", "", 0, 0},
	}
	for _, tt := range tests {
		n := 0
		skipped := jsonValues([]byte(tt.in), func(any) { n++ })
		if n != tt.values || skipped != tt.skipped {
			t.Errorf("%s: jsonValues(%q) = %d values, %d skipped; want %d, %d", tt.name, tt.in, n, skipped, tt.values, tt.skipped)
		}
	}
}

// BenchmarkJSONValues_Adversarial shows the scan stays linear on output
// where every resumption would otherwise rescan the rest: compare 1000 and
// 10000 lines.
func BenchmarkJSONValues_Adversarial(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(strconv.Itoa(n)+"-lines", func(b *testing.B) {
			in := []byte(strings.Repeat("[\n", n) + "x")
			for b.Loop() {
				jsonValues(in, func(any) {})
			}
		})
	}
}

// TestDrivers_Limits checks that a preset's own prompt limits (kit.Limiter)
// reach the runner.
func TestDrivers_Limits(t *testing.T) {
	tests := []struct {
		preset string
		want   Limits
	}{
		{PresetOllama, Limits{TieOffSections: 10}},
		{PresetLLM, Limits{}},
		{PresetClaude, Limits{}},
	}
	for _, tt := range tests {
		if got := newDriver(&Agent{Preset: tt.preset}, tt.preset).limits(); got != tt.want {
			t.Errorf("%s: limits = %+v; want %+v", tt.preset, got, tt.want)
		}
	}
}

// TestACPPresets_FromTheRegistry checks that the ACP presets' values, in
// their folders under agents/, reach the ACP driver under their names.
func TestACPPresets_FromTheRegistry(t *testing.T) {
	tests := []struct {
		preset, program string
		argv            []string
		lost            string // an error text at the prompt that loses the session
	}{
		{PresetClaudeACP, "claude-agent-acp", []string{"claude-agent-acp"}, ""},
		{PresetCodexACP, "codex-acp", []string{"codex-acp"}, "Internal error: thread not found"},
		{PresetOpenCode, "opencode", []string{"opencode", "acp"}, ""},
		{PresetGemini, "gemini", []string{"gemini", "--acp", "--approval-mode", "default"}, ""},
	}
	for _, tt := range tests {
		a := &Agent{Preset: tt.preset}
		if got := a.Program(); got != tt.program {
			t.Errorf("%s: program %q; want %q", tt.preset, got, tt.program)
		}
		d, ok := newDriver(a, tt.preset).(acpDriver)
		if !ok || d.preset == nil {
			t.Fatalf("%s: driver %T; want the ACP driver with its preset", tt.preset, newDriver(a, tt.preset))
		}
		argv, err := d.argv(&attempt{program: program(a, d)})
		if err != nil || !slices.Equal(argv, tt.argv) {
			t.Errorf("%s: argv %q, %v; want %q", tt.preset, argv, err, tt.argv)
		}
		if tt.lost != "" && !newACPConversation(nil, d.preset).promptLost(&acp.RequestError{Code: -32603, Message: tt.lost}) {
			t.Errorf("%s: %q at the prompt does not lose the session", tt.preset, tt.lost)
		}
		if newACPConversation(nil, d.preset).promptLost(&acp.RequestError{Code: -32603, Message: "Internal error"}) {
			t.Errorf("%s: any error at the prompt loses the session", tt.preset)
		}
	}
}

// TestACPPresets_Model checks that a preset with a ModelFlag (gemini)
// passes the model on its command line, and that one without (and a
// protocol: acp command) does not and says so.
func TestACPPresets_Model(t *testing.T) {
	tests := []struct {
		preset string
		argv   []string
		noted  bool // "the model … was not passed on"
	}{
		{PresetGemini, []string{"gemini", "--acp", "--approval-mode", "default", "--model", "m-1"}, false},
		{PresetCodexACP, []string{"codex-acp"}, true},
		{"", []string{"agent"}, true},
	}
	for _, tt := range tests {
		a := &Agent{Preset: tt.preset, Command: []string{"agent"}, Protocol: ProtocolACP}
		if tt.preset != "" {
			a = &Agent{Preset: tt.preset}
		}
		d := newDriver(a, tt.preset).(acpDriver)
		at := &attempt{req: &Request{Agent: *a}, program: program(a, d), model: "m-1", prompt: "p"}
		argv, err := d.argv(at)
		if err != nil || !slices.Equal(argv, tt.argv) {
			t.Errorf("%q: argv %q, %v; want %q", tt.preset, argv, err, tt.argv)
		}
		c := d.converse(at).(*acpConversation)
		noted := slices.ContainsFunc(c.notes, func(n string) bool { return strings.Contains(n, `the model "m-1" was not passed on`) })
		if noted != tt.noted {
			t.Errorf("%q: notes %q; want the model's note: %v", tt.preset, c.notes, tt.noted)
		}
	}
}
