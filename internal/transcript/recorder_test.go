package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestRecorder_ConcurrentWritersKeepSeqAndWholeLines(t *testing.T) {
	const writers, each = 16, 100
	dir := t.TempDir()
	r := mustCreate(t, dir, testRunID, nil)
	mustRecord(t, r, startedPayload())

	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				// Sizes from a few bytes to 8 KiB, and some of 64 KiB:
				// far beyond PIPE_BUF.
				n := (i * w * 97) % (8 << 10)
				if i%50 == 7 {
					n = 64 << 10
				}
				pad := strings.Repeat(string(rune('a'+w)), n)
				if _, err := r.Record(UserMessage{Prompt: fmt.Sprintf("w%d i%d %s", w, i, pad)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Record = %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	raw, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n"))
	if want := 1 + writers*each; len(lines) != want || !bytes.HasSuffix(raw, []byte("\n")) {
		t.Fatalf("the file has %d lines; want %d whole lines", len(lines), want)
	}
	for i, l := range lines {
		if !json.Valid(l) {
			t.Fatalf("line %d is not valid JSON (interleaved?): %.120q", i+1, l)
		}
	}
	evs, warns := mustReadFile(t, r.path)
	if len(warns) != 0 {
		t.Fatalf("ReadFile warned %v", warns)
	}
	next := make([]int, writers) // each writer's lines appear in its order
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d; want %d", i, ev.Seq, i+1)
		}
		if i == 0 {
			continue
		}
		p, err := ev.Payload()
		if err != nil {
			t.Fatal(err)
		}
		var w, n int
		if _, err := fmt.Sscanf(p.(UserMessage).Prompt, "w%d i%d", &w, &n); err != nil {
			t.Fatalf("seq %d: %v", ev.Seq, err)
		}
		if n != next[w] {
			t.Fatalf("seq %d is writer %d's line %d; want its line %d", ev.Seq, w, n, next[w])
		}
		next[w]++
	}
}

func TestCreate_Modes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no Unix permission bits")
	}
	dir := filepath.Join(t.TempDir(), ".knot", "runs")
	r := mustCreate(t, dir, testRunID, nil)
	mustRecord(t, r, startedPayload())
	for path, want := range map[string]fs.FileMode{dir: fs.ModeDir | 0o700, r.path: 0o600} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != want {
			t.Errorf("mode of %s = %v; want %v", path, info.Mode(), want)
		}
	}
}

func TestCreate_Refuses(t *testing.T) {
	dir := t.TempDir()
	mustCreate(t, dir, testRunID, nil)
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), Path(dir, testRunID2)); err != nil && runtime.GOOS != "windows" {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, runID string
		want        error
	}{
		{"empty", "", ErrBadRunID},
		{"path", "../" + testRunID, ErrBadRunID},
		{"upper case", strings.ToUpper(testRunID), ErrBadRunID},
		{"braces", "{" + testRunID + "}", ErrBadRunID},
		{"not a uuid", "run-1", ErrBadRunID},
		{"exists", testRunID, fs.ErrExist},
		{"symlink", testRunID2, fs.ErrExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "symlink" && runtime.GOOS == "windows" {
				t.Skip("no symlinks")
			}
			r, err := Create(dir, tc.runID, nil)
			if !errors.Is(err, tc.want) {
				if r != nil {
					r.Close()
				}
				t.Errorf("Create(%q) = %v; want %v", tc.runID, err, tc.want)
			}
		})
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Create followed the symlink: %v", err)
	}
}

func TestCreate_DirIsAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "runs")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if r, err := Create(file, testRunID, nil); err == nil {
		r.Close()
		t.Errorf("Create in a file = nil error")
	}
}

func TestRecorder_FirstEventMustBeStarted(t *testing.T) {
	r := mustCreate(t, t.TempDir(), testRunID, nil)
	if _, err := r.Record(UserMessage{Prompt: "x"}); !errors.Is(err, ErrNotStarted) {
		t.Errorf("Record(UserMessage) first = %v; want ErrNotStarted", err)
	}
	if _, err := r.Record(nil); err == nil {
		t.Errorf("Record(nil) = nil error")
	}
	ev := mustRecord(t, r, &Started{Strand: "a.md", Event: 1, Argv: []string{"tool", "--token", "abc"}})
	if ev.Seq != 1 || ev.Type != RunStarted || ev.RunID != testRunID {
		t.Errorf("Record(*Started) = %+v", ev)
	}
	if bytes.Contains(ev.Data, []byte("abc")) {
		t.Errorf("Record(*Started) did not mask argv: %s", ev.Data)
	}
	if r.runID != testRunID || seqOf(r) != 1 {
		t.Errorf("runID, seq = %q, %d", r.runID, seqOf(r))
	}
}

func TestRecorder_RefusesInvalidPayload(t *testing.T) {
	r := mustCreate(t, t.TempDir(), testRunID, nil)
	if _, err := r.Record(Started{Strand: "a.md"}); err == nil {
		t.Errorf("Record(Started with no event) = nil error")
	}
	mustRecord(t, r, startedPayload())
	bad := AssistantMessage{Blocks: []Block{{Type: BlockToolUse, Input: json.RawMessage("{not json")}}}
	if _, err := r.Record(bad); err == nil {
		t.Errorf("Record(invalid input JSON) = nil error")
	}
	if ev := mustRecord(t, r, UserMessage{}); ev.Seq != 2 {
		t.Errorf("seq after refused payloads = %d; want 2", ev.Seq)
	}
}

func TestRecorder_CloseTwice(t *testing.T) {
	r, err := Create(t.TempDir(), testRunID, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustRecord(t, r, startedPayload())
	if err := r.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close() = %v; want nil", err)
	}
	if _, err := r.Record(UserMessage{}); !errors.Is(err, ErrClosed) {
		t.Errorf("Record after Close = %v; want ErrClosed", err)
	}
}

func TestRecorder_WriteErrorIsReturned(t *testing.T) {
	r := mustCreate(t, t.TempDir(), testRunID, nil)
	mustRecord(t, r, startedPayload())
	f := r.f
	if err := f.Close(); err != nil { // pull the file from under it
		t.Fatal(err)
	}
	if _, err := r.Record(UserMessage{}); err == nil || !strings.Contains(err.Error(), "write") {
		t.Errorf("Record on a closed file = %v; want a write error", err)
	}
	if seqOf(r) != 1 {
		t.Errorf("seq after a failed write = %d; want 1", seqOf(r))
	}
	if err := r.Close(); err == nil {
		t.Errorf("Close of a closed file = nil error")
	}
	// The cleanup's second Close returns nil.
}

func TestRecorder_MasksSecrets(t *testing.T) {
	const key = "sk-ant-api03-0123456789abcdef"
	env := []string{"ANTHROPIC_API_KEY=" + key, "DB_PASSWORD=pa\"ss\\word!", "HOME=/home/user"}
	r := mustCreate(t, t.TempDir(), testRunID, &Options{Masker: NewMasker(env)})
	st := startedPayload()
	st.Argv = []string{"tool", "--api-key=" + key, "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123", "-H", "Authorization: Bearer xyz123456"}
	mustRecord(t, r, st)
	mustRecord(t, r, AssistantMessage{Blocks: []Block{
		{Type: BlockToolUse, Name: "Bash", Input: json.RawMessage(`{"command":"echo ` + key + `"}`)},
		{Type: BlockToolResult, Content: "ANTHROPIC_API_KEY=" + key + "\nDB_PASSWORD=pa\"ss\\word!\n"},
	}})
	mustRecord(t, r, Finished{Outcome: "failed", Stderr: "bad key " + key})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{key, `pa\"ss\\word`, "ghp_abc", "xyz123456"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the transcript holds %q:\n%s", secret, raw)
		}
	}
	if _, warns := mustReadFile(t, r.path); len(warns) != 0 {
		t.Errorf("masking broke the JSON: %v", warns)
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	r := mustCreate(t, dir, testRunID, nil)
	mustRecord(t, r, startedPayload())
	mustRecord(t, r, UserMessage{Prompt: "p"})

	if _, err := Reopen(dir, testRunID, nil); !errors.Is(err, ErrInUse) {
		t.Errorf("Reopen while a Recorder has the file = %v; want ErrInUse", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// A crash cut the next line.
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"seq":3,"run_id":"` + testRunID + `","type":"message.assis`); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	r2, err := Reopen(dir, testRunID, nil)
	if err != nil {
		t.Fatalf("Reopen = %v", err)
	}
	if seqOf(r2) != 2 {
		t.Errorf("Reopen: seq = %d; want 2", seqOf(r2))
	}
	mustRecord(t, r2, TieOff{Path: "a.tieoff.md"})
	if err := r2.Close(); err != nil {
		t.Fatal(err)
	}
	evs, warns := mustReadFile(t, r.path)
	if len(warns) != 0 || len(evs) != 3 || evs[2].Seq != 3 || evs[2].Type != TieOffAppended {
		t.Errorf("after Reopen: %+v, %v", evs, warns)
	}
}

func TestReopen_Refuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	other := `{"seq":1,"run_id":"` + testRunID + `","type":"run.started","data":{}}` + "\n"
	write(testRunID2+Ext, other)
	garbage := "01936f4e-1a2b-7c3d-8e4f-a1b2c3d4e5f8"
	write(garbage+Ext, "garbage\n")
	empty := "01936f4e-1a2b-7c3d-8e4f-a1b2c3d4e5f9"
	write(empty+Ext, "")
	for _, tc := range []struct{ name, runID string }{
		{"bad id", "x"},
		{"missing", testRunID},
		{"other run", testRunID2},
		{"not a transcript", garbage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r, err := Reopen(dir, tc.runID, nil); err == nil {
				r.Close()
				t.Errorf("Reopen(%q) = nil error", tc.runID)
			}
		})
	}
	// An empty file (a crash before the first line) starts at seq 1.
	r, err := Reopen(dir, empty, nil)
	if err != nil {
		t.Fatalf("Reopen(empty) = %v", err)
	}
	defer r.Close()
	if ev := mustRecord(t, r, startedPayload()); ev.Seq != 1 {
		t.Errorf("first seq after reopening an empty file = %d", ev.Seq)
	}
}

func TestReopen_LastLineEnvelopeAfterPayload(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("z", 100<<10) // past the peek and one read chunk
	content := `{"seq":1,"run_id":"` + testRunID + `","type":"run.started","time":"2026-11-21T19:30:05Z","data":{"strand":"a.md","event":"Created"}}` + "\n" +
		`{"data":{"prompt":"` + big + `"},"type":"message.user","seq":2,"run_id":"` + testRunID + `"}` + "\n"
	if err := os.WriteFile(Path(dir, testRunID), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Reopen(dir, testRunID, nil)
	if err != nil {
		t.Fatalf("Reopen = %v", err)
	}
	defer r.Close()
	if seqOf(r) != 2 {
		t.Errorf("seq = %d; want 2", seqOf(r))
	}
}

func TestReadLine_Limit(t *testing.T) {
	r := strings.NewReader(strings.Repeat("a", 100<<10) + "\nb")
	if _, err := readLine(r, 0, 64<<10); err == nil {
		t.Errorf("readLine past the limit = nil error")
	}
	if l, err := readLine(r, int64(100<<10)+1, 10); err != nil || string(l) != "b" {
		t.Errorf("readLine(last, no newline) = %q, %v", l, err)
	}
}
