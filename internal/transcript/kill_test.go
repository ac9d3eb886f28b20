package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// envWriterDir, when set, makes the test binary a writer process (see
// writerMain) instead of running the tests.
const envWriterDir = "TRANSCRIPT_TEST_WRITER_DIR"

// writerMaxSize bounds the transcript a writer process writes before it
// waits to be killed, so a parent that fails to kill it cannot fill the
// disk.
const writerMaxSize = 32 << 20

// writerMain writes a transcript in dir as fast as it can, lines of mixed
// sizes (many beyond PIPE_BUF), says "ready" on standard output after 50
// lines, and goes on until it is killed.
func writerMain(dir string) int {
	r, err := Create(dir, testRunID, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if _, err := r.Record(startedPayload()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	big := strings.Repeat("x", 200<<10)
	var size int64
	for i := 1; size < writerMaxSize; i++ {
		prompt := fmt.Sprintf("line %d", i)
		if i%5 == 0 {
			prompt += big
		}
		ev, err := r.Record(UserMessage{Prompt: prompt})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		size += int64(len(ev.Data))
		if i == 50 {
			fmt.Println("ready")
		}
	}
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // wait to be killed
	return 0
}

func TestRecorder_KillMidRunLeavesWholeLines(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envWriterDir+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("writer said %q, %v; want ready", line, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the writer exited by itself; want it killed")
	}

	path := Path(dir, testRunID)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(raw, []byte("\n"))
	for i, l := range lines {
		whole := bytes.HasSuffix(l, []byte("\n"))
		if !whole && i != len(lines)-1 {
			t.Fatalf("line %d has no newline but is not the last", i+1)
		}
		if whole && !json.Valid(l) {
			t.Fatalf("whole line %d is not valid JSON: %.200q", i+1, l)
		}
	}
	evs, warns := mustReadFile(t, path)
	if len(evs) < 51 {
		t.Fatalf("ReadFile decoded %d events; want at least the 51 written before ready", len(evs))
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d; want %d", i, ev.Seq, i+1)
		}
	}
	switch {
	case len(warns) > 1:
		t.Fatalf("ReadFile warned %v; want at most one torn last line", warns)
	case len(warns) == 1 && (!warns[0].Torn || warns[0].Line != len(evs)+1):
		t.Fatalf("ReadFile warned %v; want only a torn line %d", warns[0], len(evs)+1)
	}
	t.Logf("killed after %d whole lines (%d bytes), torn last line: %v", len(evs), len(raw), len(warns) == 1)

	// The run can go on: Reopen cuts a torn line and continues seq.
	r, err := Reopen(dir, testRunID, nil)
	if err != nil {
		t.Fatalf("Reopen = %v", err)
	}
	if got := seqOf(r); got != int64(len(evs)) {
		t.Errorf("Reopen: seq = %d; want %d", got, len(evs))
	}
	mustRecord(t, r, TieOff{Path: "ideas/plan.tieoff.md", Offset: 42})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	evs2, warns2 := mustReadFile(t, path)
	if len(warns2) != 0 || len(evs2) != len(evs)+1 || evs2[len(evs)].Seq != int64(len(evs)+1) || evs2[len(evs)].Type != TieOffAppended {
		t.Errorf("after Reopen: %d events, warnings %v; want %d events ending with tieoff.appended, no warnings", len(evs2), warns2, len(evs)+1)
	}
}
