//go:build linux

package vault

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/knotd/knotd/agentrun/fakeagent"
)

// tmpfsVault mounts a tmpfs of size bytes as e's vault, or skips the test
// when this process may not mount one (it must run as root).
func tmpfsVault(t *testing.T, e *env, size int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs to fill needs root; disk-full behaviour is not tested")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)+",mode=0755"); err != nil {
		t.Skipf("cannot mount a tmpfs (%v); disk-full behaviour is not tested", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	e.root = dir
}

// fill writes files into dir until the file system is full, then frees
// about free bytes, and returns the files it wrote.
func fill(t *testing.T, dir string, free int) []string {
	t.Helper()
	var files []string
	chunk := make([]byte, 4096)
	for i := 0; ; i++ {
		p := filepath.Join(dir, fmt.Sprintf("filler-%d", i))
		err := os.WriteFile(p, chunk, 0o600)
		files = append(files, p)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		mustDo(t, err)
		if i > 1<<16 {
			t.Fatal("the file system never filled")
		}
	}
	for freed := 0; freed < free && len(files) > 0; freed += len(chunk) {
		mustDo(t, os.Remove(files[len(files)-1]))
		files = files[:len(files)-1]
	}
	return files
}

// TestDiskFull_TieOffAppend runs strands whose replies do not fit on a
// full disk: the runs are reported failed, no tie-off is torn, and once
// space returns the next pass gives every change exactly one section.
func TestDiskFull_TieOffAppend(t *testing.T) {
	for _, free := range []int{0, 8 << 10} {
		t.Run(fmt.Sprintf("free-%d", free), func(t *testing.T) {
			e := newEnv(t)
			tmpfsVault(t, e, 1<<20)
			e.useAgent("", fakeagent.Huge, strconv.Itoa(48<<10))
			e.write("old.md", "# Old\n")
			e.onceFresh()
			e.write("old.md", "# Old, edited\n")
			e.write("new.md", "# New\n")
			changed := []string{"old.md", "new.md"}
			fillers := fill(t, filepath.Join(e.root, ".knot"), free)

			v, err := Open(e.root, e.options())
			if err == nil {
				var sum Summary
				sum, err = v.Once(context.Background(), OnceOptions{})
				if cerr := v.Close(); err == nil {
					err = cerr
				}
				if err == nil && sum.Failed == 0 {
					t.Errorf("a full disk failed nothing: %+v", sum)
				}
			}
			t.Logf("on a full disk: %v", err)
			for _, rel := range changed {
				for _, s := range e.sections(rel) { // fails on a torn or unparsable tie-off
					if s.Torn {
						t.Errorf("%s: torn section on a full disk", rel)
					}
				}
			}

			for _, f := range fillers {
				mustDo(t, os.Remove(f))
			}
			e.onceFresh()
			e.assertWhole(changed)
		})
	}
}

// TestStateCommitFails_RetriedOnce fails the state commit of a run whose
// section is already in the tie-off: the run is reported failed, and the
// retry (the same pass, the next pass or the next start) does not append
// the reply a second time.
func TestStateCommitFails_RetriedOnce(t *testing.T) {
	e := newEnv(t)
	e.useAgent("", fakeagent.Echo)
	e.onceFresh()
	e.write("a.md", "# A\n")
	v := e.open()
	failed := 0
	v.store.hooks.completing = func(string) error {
		if failed == 0 {
			failed++
			return fmt.Errorf("commit: %w", syscall.ENOSPC)
		}
		return nil
	}
	if sum := e.once(v, false); sum.Failed != 1 {
		t.Errorf("a failed state commit: %+v; want one failed run", sum)
	}
	e.once(v, false) // space is back: the change is still pending
	e.close(v)
	e.onceFresh() // and a restart
	e.assertWhole([]string{"a.md"})
}
