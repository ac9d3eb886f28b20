package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/knotd/knotd/bench/internal/knotdlog"
	"github.com/knotd/knotd/bench/internal/perftrace"
	"github.com/knotd/knotd/bench/internal/proc"
	"github.com/knotd/knotd/bench/internal/profiled"
)

// launcher is how the harness starts knotd: the knotd binary, or the
// profiling variant (this program's knotd-profiled command, which runs the
// vault package the way cmd/knotd does, under the CPU profiler).
type launcher struct {
	name string
	argv []string // program and leading arguments
	// profiles, when set, is the directory the profiling variant writes
	// its profiles to (one pair per start, numbered).
	profiles string
	seq      *int
	// trace, when set, attaches perf trace to every knotd started.
	trace *perftrace.Tracer
}

// command returns the command line that runs knotd with args.
func (l launcher) command(args ...string) []string {
	argv := append([]string(nil), l.argv...)
	if l.profiles != "" {
		*l.seq++
		base := filepath.Join(l.profiles, "knotd-"+strconv.Itoa(*l.seq))
		argv = append(argv, "-cpuprofile", base+".cpu.pprof", "-memprofile", base+".heap.pprof")
	}
	return append(argv, args...)
}

// daemon is a running knotd (watch mode) whose JSON log the harness reads.
type daemon struct {
	cmd   *exec.Cmd
	log   *knotdlog.Book
	start time.Time
	done  chan struct{} // closed when the process has been waited for
	err   error         // Wait's error, once done is closed
	// profiled: knotd-profiled, which writes a heap profile on sigHeap.
	profiled bool
	trace    *perftrace.Tracer
	untrace  func() error // stops perf trace, when attached
}

// knotdEnv is the environment knotd runs in: the harness's own, with an
// empty config directory (so the user's config is never read) and the
// instant agent's stamps file.
func (e *env) knotdEnv(stamps string) []string {
	return append(os.Environ(), "XDG_CONFIG_HOME="+e.xdg, "XDG_STATE_HOME="+filepath.Dir(e.stateHome()), "BENCH_STAMPS="+stamps)
}

// knotdArgs are the flags every knotd run gets.
func (e *env) knotdArgs() []string {
	return []string{
		"--config", e.configFile, "--log-format", "json",
		"--debounce", e.opts.debounce.String(), "--concurrency", strconv.Itoa(e.opts.concurrency),
	}
}

// startWatch starts knotd watching root. The caller must stop it.
func (e *env) startWatch(l launcher, root, stamps string) (*daemon, error) {
	argv := l.command(append(e.knotdArgs(), root)...)
	d := &daemon{log: knotdlog.NewBook(), done: make(chan struct{}), profiled: l.profiles != "", trace: l.trace}
	d.cmd = exec.Command(argv[0], argv[1:]...)
	d.cmd.Env = e.knotdEnv(stamps)
	d.cmd.Stderr = d.log
	d.start = time.Now()
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start knotd: %w", err)
	}
	go func() { // owned by d: stop waits for it
		d.err = d.cmd.Wait()
		close(d.done)
	}()
	if l.trace != nil {
		var err error
		if d.untrace, err = l.trace.Attach(d.pid()); err != nil {
			_, serr := d.stop()
			return nil, errors.Join(err, serr)
		}
	}
	return d, nil
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

// heapSnapshot has the profiling variant write a heap profile of this
// moment, and waits until it has; for knotd itself it does nothing.
func (d *daemon) heapSnapshot(ctx context.Context) error {
	if !d.profiled || profiled.HeapSignal == nil {
		return nil
	}
	n := d.log.Count(knotdlog.MsgHeap)
	if err := d.cmd.Process.Signal(profiled.HeapSignal); err != nil {
		return fmt.Errorf("heap snapshot: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return d.log.Wait(wctx, func(ls []knotdlog.Line) bool { return knotdlog.CountMsg(ls, knotdlog.MsgHeap) > n })
}

// exited reports whether knotd has exited (on its own, before stop).
func (d *daemon) exited() error {
	select {
	case <-d.done:
		return fmt.Errorf("knotd exited early: %v%s", d.err, d.log.Tail())
	default:
		return nil
	}
}

// stop interrupts knotd (SIGINT, as Ctrl-C does), waits for it to exit,
// and kills it if it has not within a minute. It returns the process's
// final state (for its rusage).
func (d *daemon) stop() (*os.ProcessState, error) {
	if d.untrace != nil {
		if err := d.untrace(); err != nil {
			return nil, err
		}
		d.untrace = nil
		d.trace.Runs += d.log.Count(knotdlog.MsgRunFinished)
	}
	select {
	case <-d.done:
	default:
		if err := d.cmd.Process.Signal(os.Interrupt); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return nil, fmt.Errorf("stop knotd: %w", err)
		}
		select {
		case <-d.done:
		case <-time.After(time.Minute):
			_ = d.cmd.Process.Kill() // reported below as the error
			<-d.done
			return d.cmd.ProcessState, fmt.Errorf("knotd did not stop within a minute of SIGINT; killed%s", d.log.Tail())
		}
	}
	if d.err != nil {
		return d.cmd.ProcessState, fmt.Errorf("knotd: %w%s", d.err, d.log.Tail())
	}
	return d.cmd.ProcessState, nil
}

// onceResult is what one knotd --once run did.
type onceResult struct {
	wall  time.Duration
	peak  int64 // bytes
	cpu   time.Duration
	lines []knotdlog.Line
}

// once runs knotd --once on root and waits for it.
func (e *env) once(ctx context.Context, l launcher, root, stamps string) (onceResult, error) {
	argv := l.command(append(append(e.knotdArgs(), "--once"), root)...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = e.knotdEnv(stamps)
	log := knotdlog.NewBook()
	cmd.Stderr = log
	start := time.Now()
	err := cmd.Start()
	if err == nil && l.trace != nil {
		var untrace func() error
		if untrace, err = l.trace.Attach(cmd.Process.Pid); err == nil {
			err = cmd.Wait()
			err = errors.Join(err, untrace())
			l.trace.Runs += log.Count(knotdlog.MsgRunFinished)
		} else {
			err = errors.Join(err, cmd.Wait())
		}
	} else if err == nil {
		err = cmd.Wait()
	}
	res := onceResult{wall: time.Since(start), lines: log.Snapshot()}
	if err != nil {
		return res, fmt.Errorf("knotd --once: %w%s", err, log.Tail())
	}
	res.peak = proc.MaxRSS(cmd.ProcessState)
	res.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return res, nil
}
