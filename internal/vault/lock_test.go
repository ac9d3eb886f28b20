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

	"github.com/knotd/knotd/internal/statedir"
)

func TestOpen_SecondKnotdIsRefused(t *testing.T) {
	e := newEnv(t)
	e.open()
	_, err := Open(e.root, e.options())
	var le *LockedError
	if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v; want a *LockedError", err)
	}
	if le.Holder.PID != os.Getpid() || le.Vault != e.root {
		t.Errorf("LockedError = %+v; want pid %d and vault %s", le, os.Getpid(), e.root)
	}
}

// TestOpen_SubfolderIsTheVault: knotd started in a folder of a vault (one
// with .knot above it) answers that vault; two knotd never answer one note.
func TestOpen_SubfolderIsTheVault(t *testing.T) {
	e := newEnv(t)
	e.write("projects/deep/note.md", "x\n")
	e.open() // makes .knot (the heartbeats) and holds the vault
	if !e.exists(".knot") {
		t.Fatal("Open made no .knot in the vault: nothing marks it for a knotd started below")
	}
	root, above, err := FindRoot(e.abs("projects/deep"))
	if err != nil || root != e.root || !above {
		t.Fatalf("FindRoot(projects/deep) = %s, %v, %v; want the vault %s, found above", root, above, err, e.root)
	}
	if _, err := Open(root, e.options()); !errors.Is(err, ErrLocked) {
		t.Errorf("Open from a subfolder while the vault is held = %v; want ErrLocked", err)
	}
	// A folder with a .knot of its own is a vault of its own.
	e.write("inner/.knot/config.yaml", "")
	if root, above, err := FindRoot(e.abs("inner")); err != nil || root != e.abs("inner") || above {
		t.Errorf("FindRoot(inner) = %s, %v, %v; want inner itself", root, above, err)
	}
	// Nowhere near a vault: the folder itself.
	other := t.TempDir()
	if root, above, err := FindRoot(other); err != nil || above || root != mustEval(t, other) {
		t.Errorf("FindRoot(%s) = %s, %v, %v; want itself", other, root, above, err)
	}
}

func mustEval(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestOpen_OtherProcessHoldsTheVault runs a helper process that holds the
// vault: the parent is refused with the child's pid, and once the child is
// killed (no chance to clean up) the vault is free.
func TestOpen_OtherProcessHoldsTheVault(t *testing.T) {
	e := newEnv(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=holdlock", "KNOTD_VAULT_TEST_ROOT="+e.root, "KNOTD_VAULT_TEST_HOME="+e.home)
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

	_, err = Open(e.root, e.options())
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("Open while the helper holds the vault = %v; want a *LockedError", err)
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
	e.open()
}

// helperHoldLock takes the lock of the vault $KNOTD_VAULT_TEST_ROOT in the
// state directory $KNOTD_VAULT_TEST_HOME, says "locked", and holds it
// until stdin closes or the process is killed.
func helperHoldLock() int {
	l, err := statedir.Acquire(os.Getenv("KNOTD_VAULT_TEST_HOME"), os.Getenv("KNOTD_VAULT_TEST_ROOT"))
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
		h    statedir.Holder
		want string
	}{
		{statedir.Holder{PID: 1234, Host: "laptop", Started: started},
			"vault /x is in use by knotd pid 1234 on laptop (started 2026-11-21T19:30:05Z); stop it or use another vault"},
		{statedir.Holder{PID: 1234, Root: "/old/x"},
			"vault /x is in use by knotd pid 1234 for /old/x; stop it or use another vault"},
		{statedir.Holder{PID: 1234},
			"vault /x is in use by knotd pid 1234; stop it or use another vault"},
		{statedir.Holder{},
			"vault /x is in use by another knotd; stop it or use another vault"},
	}
	for _, tt := range tests {
		if got := (&LockedError{Vault: "/x", Holder: tt.h}).Error(); got != tt.want {
			t.Errorf("LockedError{%+v}.Error() = %q; want %q", tt.h, got, tt.want)
		}
	}
}
