package proc

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestMemory_OfThisProcess(t *testing.T) {
	m, err := Memory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS <= 0 || m.Peak < m.RSS || m.Anon <= 0 || m.File <= 0 || m.Anon+m.File > m.RSS {
		t.Errorf("Memory(self) = %+v; want 0 < anon + file <= rss <= peak", m)
	}
	if _, err := Memory(-1); err == nil {
		t.Error("Memory(-1) succeeded; want an error")
	}
}

func TestCPUTime_Grows(t *testing.T) {
	pid := os.Getpid()
	c0, err := CPUTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	s0, err := SchedTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
		// Burn CPU: the clock-tick counter needs at least a tick.
	}
	c1, _ := CPUTime(pid)
	s1, _ := SchedTime(pid)
	if c1 < c0 || s1 <= s0 {
		t.Errorf("cpu time went %v → %v, sched time %v → %v; want both to grow", c0, c1, s0, s1)
	}
}

func TestInotifyWatches_OfAChild(t *testing.T) {
	path, err := exec.LookPath("inotifywait")
	if err != nil {
		t.Skip("inotifywait is not installed (bench/install-peers)")
	}
	dir := t.TempDir()
	cmd := exec.Command(path, "-m", "-q", dir, t.TempDir())
	cmd.SysProcAttr = NewGroup()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := SignalGroup(cmd.Process.Pid, syscall.SIGTERM); err != nil {
			t.Error(err)
		}
		_ = cmd.Wait() // killed by the signal
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, err := InotifyWatches(cmd.Process.Pid)
		if err == nil && n == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("InotifyWatches(inotifywait of 2 dirs) = %d, %v; want 2", n, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
