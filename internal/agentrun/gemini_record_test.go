package agentrun

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/internal/proc"
	"github.com/knotd/knotd/internal/agents/gemini/geminitest"
)

// envRecordGeminiACP set to 1 makes TestGemini_RecordACP record the real
// Gemini CLI's ACP output into agents/gemini/testdata/recorded-acp (see the
// README there).
const envRecordGeminiACP = "KNOT_RECORD_GEMINI_ACP"

// TestGemini_RecordACP records what Gemini CLI 0.61.0 prints in the gemini
// preset's ACP conversations, each run by the preset's own conversation
// and proc.Run against the Gemini API stand-in: NAME.stdout, NAME.stderr,
// NAME.exit, and NAME.resume for a load. It runs only with
// KNOT_RECORD_GEMINI_ACP=1.
func TestGemini_RecordACP(t *testing.T) {
	if os.Getenv(envRecordGeminiACP) != "1" {
		t.Skipf("set %s=1 to record Gemini CLI's ACP output into %s", envRecordGeminiACP, geminiRecordedACP)
	}
	bin := geminitest.GeminiCLI(t)
	const prompt = "## Event Context\nEvent: Created\nStrand: mail.md\n\n# Mail\n\nMail me@example.com, and see @notes/secret.txt\n"
	if err := os.MkdirAll(geminiRecordedACP, 0o755); err != nil {
		t.Fatal(err)
	}
	type scenario struct {
		name    string
		trust   bool
		status  int
		perm    Permissions
		resume  string // "turn1": the session of a first turn run before
		tool    bool   // the model calls write_file
		setting string // extra settings.json "general" members
	}
	for _, sc := range []scenario{
		{name: "acp-new", trust: true},
		{name: "acp-load", trust: true, resume: "turn1", setting: `, "sessionRetention": { "enabled": false }`},
		{name: "acp-load-unknown", trust: true, resume: "11111111-2222-4333-8444-555555555555"},
		{name: "acp-http-401", trust: true, status: 401},
		{name: "acp-untrusted", trust: false},
		{name: "acp-write-read-only", trust: true, tool: true, perm: PermReadOnly},
		{name: "acp-write-edit", trust: true, tool: true, perm: PermEdit},
	} {
		t.Run(sc.name, func(t *testing.T) {
			api := geminitest.NewGemini(t)
			home, vault := t.TempDir(), t.TempDir()
			env := api.GeminiEnv(home, sc.trust)
			settings := `{
  "security": { "auth": { "selectedType": "gemini-api-key" } },
  "general": { "enableAutoUpdate": false, "enableAutoUpdateNotification": false` + sc.setting + ` },
  "privacy": { "usageStatisticsEnabled": false },
  "telemetry": { "enabled": false }
}
`
			if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o644); err != nil {
				t.Fatal(err)
			}
			run := func(resume string) (proc.Result, parsed) {
				req := &Request{Vault: vault, Agent: Agent{Preset: PresetGemini, Permissions: sc.perm}}
				a := &attempt{req: req, program: []string{bin}, prompt: prompt, resume: resume}
				argv, err := geminiDriver().argv(a)
				if err != nil {
					t.Fatal(err)
				}
				conv := geminiDriver().converse(a)
				ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
				defer cancel()
				res := proc.Run(ctx, proc.Spec{Argv: argv, Dir: vault, Env: env, Grace: 5 * time.Second,
					MaxStdout: DefaultMaxStdout, MaxStderr: DefaultMaxStderr, MaxLine: DefaultMaxLine, Talk: talkOf(conv)})
				p, err := conv.finish(res.Stdout, res.StdoutTrunc, res.Stderr)
				if err != nil {
					t.Logf("finish: %v", err)
				}
				return res, p
			}
			resume := sc.resume
			if resume == "turn1" {
				_, p := run("")
				resume = p.handle
				files, _ := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*.jsonl"))
				for _, f := range files { // as if the next turn came a minute later
					if err := os.Rename(f, filepath.Join(filepath.Dir(f), "session-aged-"+strings.TrimPrefix(filepath.Base(f), "session-"))); err != nil {
						t.Fatal(err)
					}
				}
			}
			if sc.status != 0 {
				api.SetStatus(sc.status)
			}
			if sc.tool {
				api.QueueFunctionCall(geminitest.GeminiFunctionCall{Name: "write_file",
					Args: map[string]any{"file_path": filepath.Join(vault, "notes", "out.md"), "content": "written by the model\n"}})
			}
			res, p := run(resume)
			t.Logf("%s: exit %d, parsed %+v", sc.name, res.ExitCode, p)
			write := func(ext, content string) {
				if content == "" {
					return
				}
				if err := os.WriteFile(filepath.Join(geminiRecordedACP, sc.name+ext), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write(".stdout", string(res.Stdout))
			write(".stderr", res.Stderr)
			write(".exit", "exit="+strconv.Itoa(res.ExitCode)+"\n")
			if sc.resume != "" {
				write(".resume", resume+"\n")
			}
		})
	}
	// The sums, for TestRecordedFixtures_Unchanged.
	entries, err := os.ReadDir(geminiRecordedACP)
	if err != nil {
		t.Fatal(err)
	}
	var sums []string
	for _, e := range entries {
		if e.IsDir() || e.Name() == "SHA256SUMS" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(geminiRecordedACP, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, fmt.Sprintf("%x  %s\n", sha256.Sum256(b), e.Name()))
	}
	slices.Sort(sums)
	if err := os.WriteFile(filepath.Join(geminiRecordedACP, "SHA256SUMS"), []byte(strings.Join(sums, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}
