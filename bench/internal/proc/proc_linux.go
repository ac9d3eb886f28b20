package proc

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Supported reports whether the harness can measure on this system.
func Supported() error { return nil }

// clockTick is the unit of utime and stime in /proc/PID/stat (USER_HZ,
// 100 on every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// Memory returns the memory figures of process pid.
func Memory(pid int) (Mem, error) {
	var m Mem
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return m, fmt.Errorf("memory: %w", err)
	}
	fields := map[string]*int64{"VmHWM": &m.Peak, "VmRSS": &m.RSS, "RssAnon": &m.Anon, "RssFile": &m.File}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		dst := fields[k]
		if !ok || dst == nil {
			continue
		}
		f := strings.Fields(v) // "12345 kB"
		if len(f) != 2 || f[1] != "kB" {
			return m, fmt.Errorf("memory: pid %d: odd %s line %q", pid, k, v)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("memory: pid %d: %w", pid, err)
		}
		*dst = n << 10
	}
	return m, nil
}

// CPUTime returns the CPU time (user + system) process pid has used so
// far, all its threads included, from the utime and stime fields of
// /proc/PID/stat (resolution clockTick).
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu time: %w", err)
	}
	// The command name is in parentheses and may hold spaces: fields
	// count from after the last ')'. utime and stime are fields 14 and
	// 15, so 12th and 13th after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("cpu time: pid %d: malformed stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu time: pid %d: malformed stat", pid)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cpu time: pid %d: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}

// SchedTime returns the nanosecond-precise CPU time of the threads of
// process pid alive now (the first field of each
// /proc/PID/task/TID/schedstat). Threads that exited are not counted.
func SchedTime(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("sched time: pid %d: no tasks", pid)
	}
	var total int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread exited meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("sched time: %s: %w", t, err)
		}
		total += n
	}
	return time.Duration(total), nil
}

// MaxRSS returns the peak resident set size of an exited process, in
// bytes (getrusage's ru_maxrss, which Linux reports in KiB).
func MaxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10
	}
	return 0
}

// InotifyWatches counts the inotify watches that process pid holds, from
// the "inotify wd:" lines of /proc/PID/fdinfo of its inotify descriptors.
func InotifyWatches(pid int) (int, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, fmt.Errorf("inotify watches: %w", err)
	}
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil || target != "anon_inode:inotify" {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd.Name()))
		if err != nil {
			continue
		}
		n += bytes.Count(b, []byte("inotify wd:"))
	}
	return n, nil
}

// NewGroup makes a command start in a process group of its own, so that
// SignalGroup reaches everything it started (the peers' shell pipelines).
func NewGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// SignalGroup sends sig to the process group led by pid.
func SignalGroup(pid int, sig syscall.Signal) error {
	return syscall.Kill(-pid, sig)
}

// RaiseFileLimit raises the soft limit on open files to the hard limit,
// for the harness and (since the harness sets it itself) for what it
// starts: entr opens every file it watches.
func RaiseFileLimit() error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return fmt.Errorf("file limit: %w", err)
	}
	if l.Cur >= l.Max {
		return nil
	}
	l.Cur = l.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return fmt.Errorf("file limit: %w", err)
	}
	return nil
}
