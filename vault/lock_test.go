package vault

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/strand"
)

func mustLock(t *testing.T, root string) *Lock {
	t.Helper()
	l, err := AcquireLock(root)
	if err != nil {
		t.Fatalf("AcquireLock(%s) = %v", root, err)
	}
	t.Cleanup(func() {
		if err := l.Release(); err != nil {
			t.Errorf("Release: %v", err)
		}
	})
	return l
}

func TestAcquireLock_SecondOpenInProcessConflicts(t *testing.T) {
	root := t.TempDir()
	l := mustLock(t, root)
	_, err := AcquireLock(root)
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("second AcquireLock = %v; want a *LockedError", err)
	}
	if le.Holder.PID != os.Getpid() || le.Vault != root {
		t.Errorf("LockedError = %+v; want pid %d and vault %s", le, os.Getpid(), root)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Errorf("second Release = %v; want nil", err)
	}
	mustLock(t, root)
}

func TestAcquireLock_OverwritesStaleHolder(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, strand.StateDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	stale := `{"pid":999999999,"host":"elsewhere","started":"2020-01-01T00:00:00Z"} and a much longer tail than ours`
	if err := os.WriteFile(filepath.Join(dir, LockFile), []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	mustLock(t, root)
	b, err := os.ReadFile(filepath.Join(dir, LockFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`{"pid":%d,`, os.Getpid()); !strings.HasPrefix(string(b), want) || strings.Contains(string(b), "tail") {
		t.Errorf("lock file = %q; want only this process's holder record", b)
	}
}

// TestAcquireLock_OtherProcess runs a helper process that holds the lock:
// the parent is refused with the child's pid, and once the child is killed
// (no chance to clean up) the lock is free.
func TestAcquireLock_OtherProcess(t *testing.T) {
	root := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=holdlock", "KNOTD_VAULT_TEST_ROOT="+root)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait() // killed on purpose: its exit status says nothing
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper said %q, %v; want \"locked\"", line, err)
	}

	_, err = AcquireLock(root)
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("AcquireLock while the helper holds it = %v; want a *LockedError", err)
	}
	if le.Holder.PID != cmd.Process.Pid {
		t.Errorf("LockedError.Holder.PID = %d; want the helper's pid %d", le.Holder.PID, cmd.Process.Pid)
	}
	if want := fmt.Sprintf("is in use by knotd pid %d", cmd.Process.Pid); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // "signal: killed" is expected
	mustLock(t, root)
}

// helperHoldLock takes the lock of $KNOTD_VAULT_TEST_ROOT, says "locked",
// and holds it until stdin closes or the process is killed.
func helperHoldLock() int {
	l, err := AcquireLock(os.Getenv("KNOTD_VAULT_TEST_ROOT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := l.Release(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func TestLockedError_Error(t *testing.T) {
	started := time.Date(2026, 11, 21, 19, 30, 5, 0, time.UTC)
	tests := []struct {
		h    Holder
		want string
	}{
		{Holder{PID: 1234, Host: "laptop", Started: started},
			"vault /x is in use by knotd pid 1234 on laptop (started 2026-11-21T19:30:05Z); stop it or use another vault"},
		{Holder{PID: 1234},
			"vault /x is in use by knotd pid 1234; stop it or use another vault"},
		{Holder{},
			"vault /x is in use by another knotd; stop it or use another vault"},
	}
	for _, tt := range tests {
		if got := (&LockedError{Vault: "/x", Holder: tt.h}).Error(); got != tt.want {
			t.Errorf("LockedError{%+v}.Error() = %q; want %q", tt.h, got, tt.want)
		}
	}
}
