//go:build unix

package statedir

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/flock"
	"github.com/stretchr/testify/require"
)

// TestAcquire_WaitsOutADeadHoldersChild: a knotd killed while it was
// starting an agent leaves the lock held a moment by the forked child,
// until that runs its program and the lock file closes. Acquire, finding
// the lock taken while its recorded holder no longer runs, waits for it
// instead of reporting the vault in use.
func TestAcquire_WaitsOutADeadHoldersChild(t *testing.T) {
	home, root := filepath.Join(t.TempDir(), "knotd"), newVault(t)
	l := mustAcquire(t, home, root)
	path := filepath.Join(l.Folder.Dir, LockFile)
	require.NoError(t, l.Release())

	// The "child": another open file of the lock, holding it, whose
	// content names a process that has exited.
	dead := exec.Command(os.Args[0], "-test.run=^$")
	require.NoError(t, dead.Run())
	child, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer child.Close()
	require.NoError(t, flock.TryLock(child))
	host, err := os.Hostname()
	require.NoError(t, err)
	b, err := json.Marshal(Holder{PID: dead.Process.Pid, Host: host, Started: time.Now().UTC()})
	require.NoError(t, err)
	require.NoError(t, child.Truncate(0))
	_, err = child.WriteAt(b, 0)
	require.NoError(t, err)
	// The child's exec, a moment later, closes its file: it unlocks.
	unlocked := make(chan error, 1)
	time.AfterFunc(100*time.Millisecond, func() { unlocked <- flock.Unlock(child) })

	l2, err := Acquire(home, root)
	require.NoError(t, err, "Acquire while a dead holder's child still holds the lock")
	require.NoError(t, <-unlocked) // and the file is the test's again
	require.NoError(t, l2.Release())

	// A holder that runs is never waited for.
	require.NoError(t, flock.TryLock(child))
	b, err = json.Marshal(Holder{PID: os.Getppid(), Host: host, Started: time.Now().UTC()})
	require.NoError(t, err)
	require.NoError(t, child.Truncate(0))
	_, err = child.WriteAt(b, 0)
	require.NoError(t, err)
	start := time.Now()
	_, err = Acquire(home, root)
	require.ErrorIs(t, err, ErrLocked)
	require.Less(t, time.Since(start), staleWait, "Acquire waited for a holder that runs")
}
