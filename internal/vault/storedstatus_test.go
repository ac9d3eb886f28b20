package vault

import (
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/knotd/knotd/internal/transcript"
)

// TestStoredStatus_NeverLocksOutAPass: knotd status with no daemon (and
// the console) reads the state store while a loop of them runs: a knotd
// that starts meanwhile (--once, a service) never fails with "in use".
// The store is held, read only and shared, for the records alone, not
// for the scan of the day's transcripts (many here, so that the scan is
// what a status spends its time on).
func TestStoredStatus_NeverLocksOutAPass(t *testing.T) {
	e := newEnv(t)
	e.write("a.md", "# A\n")
	e.onceFresh() // adopts
	e.write("a.md", "# A\n\nmore\n")
	if sum := e.onceFresh(); sum.Ran != 1 {
		t.Fatalf("the pass ran %d; want 1", sum.Ran)
	}
	runs := e.runsDir()
	ents, err := os.ReadDir(runs)
	if err != nil || len(ents) != 1 {
		t.Fatalf("transcripts: %v, %v; want one", ents, err)
	}
	b, err := os.ReadFile(filepath.Join(runs, ents[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	for range 1500 {
		p := transcript.Path(runs, uuid.Must(uuid.NewV7()).String())
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	stop, done := make(chan struct{}), make(chan error, 1)
	var statuses atomic.Int64
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			st, ok, err := StoredStatus(e.home, e.root)
			switch {
			case errors.Is(err, state.ErrBusy):
				// a pass holds the store: a status may wait for it
			case err != nil:
				done <- err
				return
			case !ok || st.Today.Runs < 1500:
				done <- errors.New("the status does not show the day's runs")
				return
			}
			statuses.Add(1)
		}
	}()
	testutil.WaitFor(t, 10*time.Second, "a status", func() bool { return statuses.Load() > 0 })
	for i := range 6 {
		v, err := Open(e.root, e.options())
		if err != nil {
			t.Errorf("pass %d, while statuses ran: %v", i, err)
			continue
		}
		e.close(v)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("StoredStatus: %v", err)
	}
	t.Logf("%d statuses", statuses.Load())
}
