package realcli

import (
	"errors"
	"os"
	"testing"
	"time"
)

// groupTimeout bounds how long endGroup waits for a killed group to go.
const groupTimeout = 30 * time.Second

// endGroup kills what is left of the agent's process group pgid (the
// agent leads it) and waits until no process of it is alive, so that
// nothing the agent started still writes into the test's directories when
// t.TempDir's cleanup removes them. On Windows there is no group: it does
// nothing.
func endGroup(t testing.TB, pgid int) {
	t.Helper()
	if err := killGroup(pgid); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("kill the agent's process group %d: %v", pgid, err)
		return
	}
	var left []int
	for deadline := time.Now().Add(groupTimeout); ; {
		var err error
		if left, err = liveGroup(pgid); err != nil {
			t.Errorf("the agent's process group %d: %v", pgid, err)
			return
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			break
		}
		_ = killGroup(pgid)              // one that was being started meanwhile
		time.Sleep(5 * time.Millisecond) // a poll interval, not a wait for an effect
	}
	t.Errorf("processes %v of the agent's group %d still run %v after it was killed", left, pgid, groupTimeout)
}
