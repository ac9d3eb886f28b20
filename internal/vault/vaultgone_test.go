package vault

import (
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/testutil"
)

// TestWatch_VaultDeleted removes the whole vault under a running knotd:
// Watch returns an error that says the vault is gone, instead of serving
// nothing in silence (the kernel sends no event for the vault directory
// itself while knotd holds files open in it) or running every strand as
// Deleted.
func TestWatch_VaultDeleted(t *testing.T) {
	e := newEnv(t)
	e.useAgent("", fakeagent.Echo)
	e.write("a.md", "# A\n")
	v := e.open()
	var log testutil.Buffer
	v.log = slog.New(slog.NewTextHandler(&log, nil))
	t.Cleanup(func() { t.Logf("log:\n%s", log.String()) })
	w := e.watch(v, WatchOptions{})
	e.write("a.md", "# A, edited\n")
	w.settle()
	mustDo(t, os.RemoveAll(e.root))
	select {
	case err := <-w.done:
		w.mu.Lock()
		w.stopped = true
		w.mu.Unlock()
		w.cancel()
		if !errors.Is(err, ErrVaultGone) || !strings.Contains(err.Error(), e.root) {
			t.Errorf("Watch = %v; want ErrVaultGone naming the vault", err)
		}
		if n := len(e.calls()); n != 1 {
			t.Errorf("%d agent calls; want 1: a deleted vault is not a deleted strand", n)
		}
		t.Logf("Watch: %v", err)
	case <-time.After(waitTimeout):
		t.Fatal("Watch kept running after its vault was deleted")
	}
}
