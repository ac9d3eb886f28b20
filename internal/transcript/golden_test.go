package transcript

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/testutil"
)

// recordGoldenRun records one run with every event type and every block
// type, and returns the transcript's path.
func recordGoldenRun(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	env := []string{"ANTHROPIC_API_KEY=sk-ant-api03-golden-secret-value", "HOME=/home/user"}
	r := mustCreate(t, dir, testRunID, &Options{Now: newTestClock().Now, Masker: NewMasker(env)})
	st := startedPayload()
	st.Argv = append(st.Argv, "--append-system-prompt=Be brief. <html> & \"quotes\"", "--api-key", "sk-ant-api03-golden-secret-value")
	mustRecord(t, r, st)
	mustRecord(t, r, UserMessage{Prompt: "## Event Context\nEvent: Modified\nStrand: ideas/plan.md\n\n- buy milk\n- write knotd\n"})
	mustRecord(t, r, AssistantMessage{
		Format: "claude-stream-json",
		Blocks: []Block{
			{Type: BlockThinking, Fidelity: Native, Text: "The note is a plan."},
			{Type: BlockToolUse, Fidelity: Native, ID: "toolu_01", Name: "Read", Input: json.RawMessage(`{"file_path":"ideas/plan.tieoff.md"}`)},
			{Type: BlockToolResult, Fidelity: Native, ToolUseID: "toolu_01", Content: "no such file", IsError: true},
			{Type: BlockToolUse, Fidelity: Reconstructed, ID: "toolu_02", Name: "Bash", Input: json.RawMessage(`{"command":"sleep 600"}`)},
			{Type: BlockText, Fidelity: Native, Text: "Your plan has two items.\n\n<!-- knot:run -->"},
		},
		Notes: []string{"no Claude result event: the run was cut short"},
	})
	mustRecord(t, r, Finished{Outcome: "failed", ExitCode: 1, Duration: 1234567890 * time.Nanosecond,
		Reason: "exit status 1: API Error: 401", Resume: "0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21",
		Usage:       &Usage{InputTokens: 10, OutputTokens: 8, CacheReadTokens: 3, CacheWriteTokens: 2, CostUSD: 0.0002},
		StdoutBytes: 2048, StdoutTruncated: true, Stderr: "invalid x-api-key sk-ant-api03-golden-secret-value\n\x1b[31mfailed\x1b[0m\n", StderrTruncated: true,
		Notes: []string{"skipped 1 output lines longer than the line limit"}})
	mustRecord(t, r, TieOff{Path: "ideas/plan.tieoff.md", Offset: 1234})
	return r.path
}

func TestRecorder_Golden(t *testing.T) {
	path := recordGoldenRun(t)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(got, []byte("golden-secret")) {
		t.Errorf("the transcript holds the secret:\n%s", got)
	}
	testutil.Golden(t, filepath.Join("testdata", "transcript.golden"), got)

	// Idempotence: reading the golden file and writing its events again
	// gives the same bytes.
	evs, warns, err := Read(bytes.NewReader(got))
	if err != nil || len(warns) != 0 {
		t.Fatalf("Read(golden) = %v, %v", warns, err)
	}
	var again bytes.Buffer
	for _, ev := range evs {
		line, err := ev.MarshalLine()
		if err != nil {
			t.Fatal(err)
		}
		again.Write(line)
	}
	if !bytes.Equal(again.Bytes(), got) {
		t.Errorf("MarshalLine of the read events differs from the file:\n%s", again.Bytes())
	}
	for _, ev := range evs {
		if _, err := ev.Payload(); err != nil {
			t.Errorf("Payload(seq %d) = %v", ev.Seq, err)
		}
	}
}

func TestRender_Golden(t *testing.T) {
	evs, _ := mustReadFile(t, recordGoldenRun(t))
	evs = append(evs,
		Event{Seq: 6, RunID: testRunID, Type: "tool.progress", Time: evs[4].Time.Add(time.Millisecond), Data: json.RawMessage(`{"percent":50}`)},
		Event{Seq: 7, RunID: testRunID, Type: RunFinished, Time: evs[4].Time.Add(2 * time.Millisecond), Data: json.RawMessage(`{"outcome":3}`)},
		Event{Seq: 8, RunID: testRunID, Type: MessageAssistant, Time: evs[4].Time.Add(3 * time.Millisecond), Data: json.RawMessage(`{"blocks":[]}`)},
	)
	var out bytes.Buffer
	if err := Render(&out, evs); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out.Bytes(), []byte("\x1b")) {
		t.Errorf("Render let a terminal escape through:\n%q", out.Bytes())
	}
	testutil.Golden(t, filepath.Join("testdata", "render.golden"), out.Bytes())
}
