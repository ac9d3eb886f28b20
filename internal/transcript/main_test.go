package transcript

import (
	"os"
	"sync"
	"testing"
	"time"
)

// TestMain lets the test binary act as a process that writes a transcript
// until it is killed (see TestRecorder_KillMidRunLeavesWholeLines).
func TestMain(m *testing.M) {
	if dir := os.Getenv(envWriterDir); dir != "" {
		os.Exit(writerMain(dir))
	}
	os.Exit(m.Run())
}

// Run ids used by the tests: canonical UUID v7s.
const (
	testRunID  = "01936f4e-1a2b-7c3d-8e4f-a1b2c3d4e5f6"
	testRunID2 = "01936f4e-1a2b-7c3d-8e4f-a1b2c3d4e5f7"
)

// testClock is a clock that ticks one millisecond per reading, from a fixed
// instant; safe for concurrent use.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock {
	return &testClock{t: time.Date(2026, 11, 21, 19, 30, 5, 0, time.UTC)}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

func mustCreate(t testing.TB, dir, runID string, opts *Options) *Recorder {
	t.Helper()
	r, err := Create(dir, runID, opts)
	if err != nil {
		t.Fatalf("Create(%q, %q) = %v", dir, runID, err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close() = %v", err)
		}
	})
	return r
}

func mustRecord(t testing.TB, r *Recorder, p Payload) Event {
	t.Helper()
	ev, err := r.Record(p)
	if err != nil {
		t.Fatalf("Record(%T) = %v", p, err)
	}
	return ev
}

func mustReadFile(t testing.TB, path string) ([]Event, []Warning) {
	t.Helper()
	evs, warns, err := ReadFile(path)
	if err != nil {
		t.Fatalf("ReadFile(%q) = %v", path, err)
	}
	return evs, warns
}

// startedPayload is a typical run.started.
func startedPayload() Started {
	return Started{Strand: "ideas/plan.md", Event: 2, Agent: "claude", Preset: "claude", Model: "sonnet",
		Session: "0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21", Resume: "0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21", Turn: 3, FiredBy: "watch",
		Argv: []string{"claude", "-p", "--output-format", "json", "--resume", "0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21"}}
}

// seqOf returns the seq of the last line r wrote, 0 before the first.
func seqOf(r *Recorder) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq
}
