package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/knotd/knotd/bench/internal/agentruns"
	"github.com/knotd/knotd/bench/internal/knotdlog"
	"github.com/knotd/knotd/bench/internal/proc"
)

// watching is a knotd in watch mode that has finished starting: its
// watches are in place and its catch-up reconcile is done.
type watching struct {
	*daemon
	stamps   *agentruns.Log
	probe    string
	ready    time.Time     // the probe's agent started
	watching knotdlog.Line // knotd's "watcher: watching" line
	mem      proc.Mem      // when ready
}

// startupTimeout bounds how long a knotd may take to start on a vault.
const startupTimeout = 10 * time.Minute

// watch starts knotd watching the vault and waits until it has started.
//
// Start-up ends when the catch-up reconcile is done, which knotd does not
// log. So before starting knotd the harness creates one new strand, the
// probe, as if it had been written while knotd was stopped: the catch-up
// reconcile finds it, and its run starts as soon as the reconcile is
// done. The probe's agent start is the end of start-up (one run's
// preparation and spawn, a few milliseconds, included).
func (e *env) watch(ctx context.Context, l launcher, v *benchVault) (*watching, error) {
	return e.watchWith(ctx, l, v, e.path("stamps"))
}

// watchWith is watch with the agent's stamps going to the file stamps.
func (e *env) watchWith(ctx context.Context, l launcher, v *benchVault, stamps string) (*watching, error) {
	e.seq++
	probe := fmt.Sprintf("bench-probe-%d.md", e.seq)
	if err := os.WriteFile(filepath.Join(v.root, probe), []byte("# Probe\n\nStart-up probe.\n"), 0o644); err != nil {
		return nil, err
	}
	v.probes++
	d, err := e.startWatch(l, v.root, stamps)
	if err != nil {
		return nil, err
	}
	w := &watching{daemon: d, stamps: &agentruns.Log{Path: stamps}, probe: probe}
	fail := func(err error) (*watching, error) {
		_, serr := d.stop()
		if serr != nil {
			err = fmt.Errorf("%w (and %v)", err, serr)
		}
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	all, err := w.stamps.Wait(wctx, func(all []agentruns.Stamp) bool { return agentruns.HasStrand(probe)(all) || d.exited() != nil })
	if err != nil {
		return fail(fmt.Errorf("knotd did not run the start-up probe: %w%s", err, d.log.Tail()))
	}
	if err := d.exited(); err != nil {
		return fail(err)
	}
	for _, s := range all {
		if s.Strand == probe {
			w.ready = s.At
		}
	}
	err = d.log.Wait(wctx, func(ls []knotdlog.Line) bool {
		for _, l := range ls {
			if l.Msg == knotdlog.MsgRunFinished && l.Strand == probe {
				return true
			}
		}
		return false
	})
	if err != nil {
		return fail(err)
	}
	w.watching, _ = knotdlog.Find(d.log.Snapshot(), knotdlog.MsgWatching)
	if w.mem, err = proc.Memory(d.pid()); err != nil {
		return fail(err)
	}
	return w, nil
}

// quiesce waits until knotd has dealt with its own writes: the probe's
// knot_session went into the probe, which knotd sees as an event, reconciles
// after the quiet period, and finds to be its own write. There is no log
// line for "nothing to do", so this waits twice the quiet period and a
// margin.
func (w *watching) quiesce(debounce time.Duration) {
	time.Sleep(2*debounce + 200*time.Millisecond)
}

// runsFinished returns a log predicate: n runs have finished.
func runsFinished(n int) func([]knotdlog.Line) bool {
	return func(ls []knotdlog.Line) bool {
		c := 0
		for _, l := range ls {
			if l.Msg == knotdlog.MsgRunFinished {
				c++
			}
		}
		return c >= n
	}
}
