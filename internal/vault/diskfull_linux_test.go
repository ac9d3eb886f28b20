//go:build linux

package vault

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/fakeagent"
)

// mountTmpfs mounts a tmpfs of size bytes at dir until the test ends, or
// skips the test when this process may not mount one (it must be root).
func mountTmpfs(t *testing.T, dir string, size int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs to fill needs root; disk-full behaviour is not tested")
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)+",mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs (%v); disk-full behaviour is not tested", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}

// tmpfsVault makes e's vault a tmpfs of size bytes. knotd's state
// directory is on the same tmpfs (in a dot-folder of the vault, which
// knotd ignores), or with separateState a tmpfs of its own that does not
// fill up.
func tmpfsVault(t *testing.T, e *env, size int, separateState bool) {
	t.Helper()
	dir := t.TempDir()
	mountTmpfs(t, dir, size)
	mustDo(t, os.Chmod(dir, 0o755))
	e.root = dir
	if separateState {
		e.home = t.TempDir()
		mountTmpfs(t, e.home, 16<<20)
		return
	}
	e.home = filepath.Join(dir, ".state-home")
	mustDo(t, os.Mkdir(e.home, 0o700))
}

// fill writes files into dir until the file system is full, then frees
// about free bytes, and returns the files it wrote.
func fill(dir string, free int) ([]string, error) {
	var files []string
	chunk := make([]byte, 4096)
	for i := 0; ; i++ {
		p := filepath.Join(dir, fmt.Sprintf("filler-%d", i))
		err := os.WriteFile(p, chunk, 0o600)
		files = append(files, p)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			return files, err
		}
		if i > 1<<16 {
			return files, errors.New("the file system never filled")
		}
	}
	for freed := 0; freed < free && len(files) > 0; freed += len(chunk) {
		if err := os.Remove(files[len(files)-1]); err != nil {
			return files, err
		}
		files = files[:len(files)-1]
	}
	return files, nil
}

// fillingAgent fills the disk once, after the first reply it got: the
// disk is full when knotd journals and appends it.
type fillingAgent struct {
	inner AgentRunner
	once  *sync.Once
	fill  func()
}

func (a fillingAgent) Run(ctx context.Context, req agentrun.Request) (agentrun.Result, error) {
	res, err := a.inner.Run(ctx, req)
	a.once.Do(a.fill)
	return res, err
}

// TestDiskFull_TieOffAppend runs strands on a disk that is full before
// their runs start, or that fills up while the agent replies (so that the
// journal, the tie-off append or the state commit fails, possibly halfway
// through a 48 KiB reply): the runs are reported failed, no tie-off is
// torn, and once space returns the next pass gives every change exactly
// one section.
func TestDiskFull_TieOffAppend(t *testing.T) {
	for _, tt := range []struct {
		name                     string
		afterReply, ownStateDisk bool
		free                     int
	}{
		{"before-run", false, false, 0},
		{"before-run-8k-free", false, false, 8 << 10},
		{"after-reply", true, false, 0},
		{"after-reply-16k-free", true, false, 16 << 10},
		{"after-reply-40k-free", true, false, 40 << 10},
		// State on a disk of its own: the journal is written, the tie-off
		// append is what fails, whole or halfway through the reply.
		{"tieoff-only", true, true, 0},
		{"tieoff-only-16k-free", true, true, 16 << 10},
		{"tieoff-only-40k-free", true, true, 40 << 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tmpfsVault(t, e, 1<<20, tt.ownStateDisk)
			e.useAgent("", fakeagent.Huge, strconv.Itoa(48<<10))
			e.write("old.md", "# Old\n")
			e.onceFresh()
			e.write("old.md", "# Old, edited\n")
			e.write("new.md", "# New\n")
			changed := []string{"old.md", "new.md"}
			fillDir := filepath.Join(e.root, ".filler")
			mustDo(t, os.Mkdir(fillDir, 0o700))
			var fillers []string
			var fillErr error
			doFill := func() { fillers, fillErr = fill(fillDir, tt.free) }
			if !tt.afterReply {
				doFill()
			}

			v, err := Open(e.root, e.options())
			if err == nil {
				if tt.afterReply {
					v.agent = fillingAgent{inner: v.runAgent(), once: new(sync.Once), fill: doFill}
				}
				var sum Summary
				sum, err = v.Once(context.Background(), OnceOptions{})
				if cerr := v.Close(); err == nil {
					err = cerr
				}
				if err == nil && sum.Failed == 0 {
					t.Errorf("a full disk failed nothing: %+v", sum)
				}
				for _, r := range sum.Runs {
					t.Logf("on a full disk: %s %s: %s", r.Strand, r.Outcome, r.Reason)
				}
			}
			mustDo(t, fillErr)
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
	probeOf(v).completingFn = func(string) error {
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
