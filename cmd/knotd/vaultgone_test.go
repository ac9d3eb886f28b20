package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/testutil"
	"github.com/knotd/knotd/internal/vault"
	"github.com/stretchr/testify/require"
)

// TestRun_WatchedVaultDeleted: when the vault directory is deleted under
// a watching knotd, it says so in its log and exits 1; it does not keep
// running blind.
func TestRun_WatchedVaultDeleted(t *testing.T) {
	v, _ := setup(t)
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	var stderr testutil.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"--debounce", "50ms", "--log-format", "json", v}, strings.NewReader(""), &testutil.Buffer{}, &stderr)
	}()
	testutil.WaitFor(t, waitTimeout, "knotd to watch", func() bool { return strings.Contains(stderr.String(), `"msg":"watcher: watching"`) })
	writeFile(t, filepath.Join(v, "a.md"), "# A\n\nedited while watched\n")
	testutil.WaitFor(t, waitTimeout, "the run", func() bool {
		b, _ := os.ReadFile(filepath.Join(v, "a.tieoff.md"))
		return strings.Contains(string(b), "## Event: Modified")
	})
	require.NoError(t, os.RemoveAll(v))
	select {
	case err := <-done:
		if !errors.Is(err, vault.ErrVaultGone) || exitCode(err) != exitFailed {
			t.Errorf("run = %v (exit %d); want ErrVaultGone, exit %d", err, exitCode(err), exitFailed)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("knotd kept running after its vault was deleted")
	}
	if logs := stderr.String(); !strings.Contains(logs, "vault directory is gone") {
		t.Errorf("the log does not say the vault is gone:\n%s", logs)
	}
}
