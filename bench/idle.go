package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/knotd/knotd/bench/internal/proc"
	"github.com/knotd/knotd/bench/internal/stats"
	"github.com/knotd/knotd/bench/internal/table"
)

// idle measures scenario 6 on the largest vault (100,000 strands in
// 10,100 directories): knotd's CPU time over -idle (60 s) of watching an
// unchanging vault, scaled to a minute, and its resident memory at the
// end, split into anonymous memory (heap, stacks) and mapped files (the
// binary, the bbolt state file). CPU time is the sum of the threads'
// /proc/PID/task/*/schedstat run times (nanoseconds), read after start-up
// has settled and again at the end.
func idle(ctx context.Context, e *env, l launcher) ([]table.Row, error) {
	n := slices.Max(e.opts.sizes)
	v, err := e.vault(ctx, n)
	if err != nil {
		return nil, err
	}
	var cpu, ticks, rss, anon, file []float64
	watches := 0
	for run := range e.opts.runs {
		e.logf("idle: run %d/%d, %s on %s strands", run+1, e.opts.runs, e.opts.idle, stats.Thousands(n))
		c, m, wn, err := e.idleRun(ctx, l, v)
		if err != nil {
			return nil, err
		}
		cpu, ticks = append(cpu, c.sched), append(ticks, c.ticks)
		rss, anon, file = append(rss, stats.MiB(m.RSS)), append(anon, stats.MiB(m.Anon)), append(file, stats.MiB(m.File))
		watches = wn
	}
	scen := fmt.Sprintf("6 idle (%s strands, %s dirs)", stats.Thousands(n), stats.Thousands(v.dirs+1))
	return []table.Row{
		table.NewRow(scen, fmt.Sprintf("CPU time over %s, per minute", e.opts.idle), stats.Format(stats.Median(cpu))+" ms/min").
			MaxBudget(stats.Median(cpu), 50, "< 50 ms/min").Profiled("idle", n),
		table.NewRow(scen, "the same from /proc/PID/stat (10 ms ticks, exited threads too)", stats.Format(stats.Median(ticks))+" ms/min"),
		table.NewRow(scen, "RSS at the end", stats.Format(stats.Median(rss))+" MiB").
			MaxBudget(stats.Median(rss), 40, "< 40 MiB").Profiled("idle", n),
		table.NewRow(scen, "of which anonymous (heap, stacks)", stats.Format(stats.Median(anon))+" MiB"),
		table.NewRow(scen, "of which mapped files (binary, state.db)", stats.Format(stats.Median(file))+" MiB"),
		table.NewRow(scen, "inotify watches", stats.Thousands(watches)),
	}, nil
}

// idleCPU is CPU time per minute in milliseconds, from schedstat and from
// stat.
type idleCPU struct{ sched, ticks float64 }

// idleRun watches the vault for e.opts.idle and returns the CPU time used
// per minute, the memory at the end and the number of inotify watches.
func (e *env) idleRun(ctx context.Context, l launcher, v *benchVault) (c idleCPU, m proc.Mem, watches int, err error) {
	w, err := e.watch(ctx, l, v)
	if err != nil {
		return c, m, 0, err
	}
	defer func() {
		if _, serr := w.stop(); err == nil {
			err = serr
		}
	}()
	w.quiesce(e.opts.debounce)
	// Let the garbage collector and the scavenger finish with start-up.
	time.Sleep(2 * time.Second)
	pid := w.pid()
	s0, err := proc.SchedTime(pid)
	if err != nil {
		return c, m, 0, err
	}
	c0, err := proc.CPUTime(pid)
	if err != nil {
		return c, m, 0, err
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return c, m, 0, context.Cause(ctx)
	case <-time.After(e.opts.idle):
	}
	s1, err := proc.SchedTime(pid)
	if err != nil {
		return c, m, 0, err
	}
	c1, err := proc.CPUTime(pid)
	if err != nil {
		return c, m, 0, err
	}
	perMin := float64(time.Minute) / float64(time.Since(t0))
	if err := w.exited(); err != nil {
		return c, m, 0, err
	}
	if m, err = proc.Memory(pid); err != nil {
		return c, m, 0, err
	}
	if watches, err = proc.InotifyWatches(pid); err != nil {
		return c, m, 0, err
	}
	if err := w.heapSnapshot(ctx); err != nil {
		return c, m, 0, err
	}
	return idleCPU{sched: stats.Ms(s1-s0) * perMin, ticks: stats.Ms(c1-c0) * perMin}, m, watches, nil
}
