// Package perftrace attaches perf trace -s to knotd processes and sums
// up the system calls that took the most time (fsync, fdatasync, waitid:
// what a CPU profile does not show), for the notes under the bench's table.
package perftrace

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/knotd/knotd/bench/internal/stats"
)

// Tracer attaches perf trace -s to the knotd processes of a profiled
// scenario, for the system calls' count and time (what a CPU profile does
// not show: time spent waiting in fsync, fdatasync, waitid). It is used by
// one goroutine.
type Tracer struct {
	Dir  string // where perf trace writes its summaries
	seq  int
	Runs int // runs finished in the traced processes (the caller counts them)
}

// Attach starts perf trace on pid; the returned function stops it (perf
// writes its summary when interrupted, or when pid exits) and waits.
func (t *Tracer) Attach(pid int) (stop func() error, err error) {
	t.seq++
	out := filepath.Join(t.Dir, fmt.Sprintf("syscalls-%d.txt", t.seq))
	cmd := exec.Command("perf", "trace", "-s", "-p", strconv.Itoa(pid), "-o", out)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("perf trace: %w", err)
	}
	// perf needs a moment to attach; what happens before is not counted.
	time.Sleep(300 * time.Millisecond)
	return func() error {
		if err := cmd.Process.Signal(os.Interrupt); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("stop perf trace: %w", err)
		}
		_ = cmd.Wait() // interrupted on purpose: its exit status says nothing
		return nil
	}, nil
}

// syscallStat is one system call's total over the traced threads.
type syscallStat struct {
	name  string
	calls int
	msec  float64
}

// waits are the system calls of idle goroutines and threads: their time
// is waiting for work, not work.
var waits = map[string]bool{"futex": true, "epoll_pwait": true, "epoll_wait": true, "nanosleep": true,
	"clock_nanosleep": true, "sched_yield": true, "rt_sigreturn": true, "pselect6": true}

// summary merges the perf trace -s files of the tracer and returns the
// system calls that took the most time, idle waits left out.
func (t *Tracer) summary(n int) ([]syscallStat, error) {
	files, err := filepath.Glob(filepath.Join(t.Dir, "syscalls-*.txt"))
	if err != nil {
		return nil, err
	}
	total := map[string]*syscallStat{}
	for _, f := range files {
		if err := parsePerfSummary(f, total); err != nil {
			return nil, err
		}
	}
	var out []syscallStat
	for _, s := range total {
		if !waits[s.name] {
			out = append(out, *s)
		}
	}
	slices.SortFunc(out, func(a, b syscallStat) int { return cmp.Compare(b.msec, a.msec) })
	return out[:min(n, len(out))], nil
}

// parsePerfSummary adds the per-thread tables of one perf trace -s output
// to total. A table line is: name calls errors total min avg max stddev.
func parsePerfSummary(path string, total map[string]*syscallStat) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close() // read only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 {
			continue
		}
		calls, err1 := strconv.Atoi(fs[1])
		msec, err2 := strconv.ParseFloat(fs[3], 64)
		if err1 != nil || err2 != nil {
			continue // a heading or a rule
		}
		s := total[fs[0]]
		if s == nil {
			s = &syscallStat{name: fs[0]}
			total[fs[0]] = s
		}
		s.calls += calls
		s.msec += msec
	}
	return sc.Err()
}

// Table renders the summary for the notes under the table.
func (t *Tracer) Table() []string {
	top, err := t.summary(12)
	switch {
	case err != nil:
		return []string{fmt.Sprintf("No system call summary (perf trace): %v", err)}
	case len(top) == 0:
		return []string{"No system call summary: perf trace wrote none (it may lack the permission to trace, see /proc/sys/kernel/perf_event_paranoid)"}
	}
	lines := []string{"", fmt.Sprintf("System calls of knotd in one more run of the scenario (perf trace -s attached to knotd itself, waits for work left out, %s agent runs; perf attaches 0.3 s after knotd starts and may drop events under load, so counts are lower bounds):", stats.Thousands(t.Runs)), "",
		"| system call | calls | per run | total ms | ms per run |", "| --- | ---: | ---: | ---: | ---: |"}
	for _, s := range top {
		per, perMs := "", ""
		if t.Runs >= 100 { // per run means something for bursts, not for start-up
			per = stats.Format(float64(s.calls) / float64(t.Runs))
			perMs = stats.Format(s.msec / float64(t.Runs))
		}
		lines = append(lines, fmt.Sprintf("| %s | %d | %s | %s | %s |", s.name, s.calls, per, stats.Format(s.msec), perMs))
	}
	return lines
}
