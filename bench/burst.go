package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/knotd/knotd/bench/internal/agentruns"
	"github.com/knotd/knotd/bench/internal/edits"
	"github.com/knotd/knotd/bench/internal/knotdlog"
	"github.com/knotd/knotd/bench/internal/proc"
	"github.com/knotd/knotd/bench/internal/stats"
	"github.com/knotd/knotd/bench/internal/table"
)

// burst measures scenario 4 on the largest vault: -burst strands (10,000)
// changed within one second while knotd watches, with the instant agent
// at -concurrency (2). Every changed strand must run exactly once (agent
// stamps, tie-off run markers), whether or not the kernel's event queue
// overflowed (knotd then rescans). Reported: the write span, runs per
// second (agent starts, first to last), the settled moment of the last
// write to the last run's end, CPU per run, the share of a run spent in
// the agent (knotd's logged run duration), peak RSS, and the baseline:
// the same agents spawned directly at the same concurrency.
func burst(ctx context.Context, e *env, l launcher) ([]table.Row, error) {
	n := slices.Max(e.opts.sizes)
	k := min(e.opts.burst, n)
	v, err := e.vault(ctx, n)
	if err != nil {
		return nil, err
	}
	var (
		span, rate, spawnRate, drain, cpuPerRun, agentShare, peak, idleRSS []float64
		missed, extra, badSections, overflows                              int
	)
	for run := range e.opts.runs {
		e.logf("burst: run %d/%d, %s of %s strands changed at once", run+1, e.opts.runs, stats.Thousands(k), stats.Thousands(n))
		r, err := e.burstRun(ctx, l, v, k, run)
		if err != nil {
			return nil, err
		}
		span, rate, spawnRate = append(span, stats.Ms(r.span)), append(rate, r.rate), append(spawnRate, r.spawnRate)
		drain, cpuPerRun = append(drain, r.drain.Seconds()), append(cpuPerRun, stats.Ms(r.cpu)/float64(k))
		agentShare, peak = append(agentShare, 100*r.agentShare), append(peak, stats.MiB(r.peak))
		idleRSS = append(idleRSS, stats.MiB(r.idleRSS))
		missed, extra, badSections = missed+r.missed, extra+r.extra, badSections+r.badSections
		if r.overflow {
			overflows++
		}
	}
	scen := fmt.Sprintf("4 burst (%s of %s strands)", stats.Thousands(k), stats.Thousands(n))
	return []table.Row{
		table.NewRow(scen, "changes written in", stats.Format(stats.Median(span))+" ms").MaxBudget(stats.Median(span), 1000, "< 1 s (the harness's side)"),
		table.NewRow(scen, "every changed strand ran once, no other", fmt.Sprintf("%d missed, %d extra", missed, extra)).
			Check(missed == 0 && extra == 0, "0 missed, 0 extra"),
		table.NewRow(scen, "tie-off sections: +1 per changed strand only", fmt.Sprintf("%d wrong", badSections)).
			Check(badSections == 0, "0 wrong"),
		table.NewRow(scen, "kernel event queue overflowed (then: rescan)", fmt.Sprintf("%d of %d runs", overflows, e.opts.runs)),
		table.NewRow(scen, fmt.Sprintf("runs/s at concurrency %d", e.opts.concurrency), stats.Format(stats.Median(rate))).
			WithBase(stats.Format(stats.Median(spawnRate))+" (direct spawns/s)", stats.Median(table.Ratios(rate, spawnRate))).Profiled("burst", n),
		table.NewRow(scen, "last settled moment → last run finished", stats.Format(stats.Median(drain))+" s"),
		table.NewRow(scen, "CPU (user+sys) per run", stats.Format(stats.Median(cpuPerRun))+" ms"),
		table.NewRow(scen, "share of run time inside the agent (spawn to exit)", stats.Format(stats.Median(agentShare))+" %"),
		table.NewRow(scen, "peak RSS", stats.Format(stats.Median(peak))+" MiB"),
		table.NewRow(scen, fmt.Sprintf("RSS %s after the last run", idleAgain), stats.Format(stats.Median(idleRSS))+" MiB"),
	}, nil
}

// idleAgain is how long the burst scenario lets knotd sit idle after the
// last run before it reads the RSS knotd keeps.
const idleAgain = 12 * time.Second

// burstResult is one burst run.
type burstResult struct {
	span, drain, cpu            time.Duration
	rate, spawnRate, agentShare float64
	peak, idleRSS               int64
	missed, extra, badSections  int
	overflow                    bool
}

func (e *env) burstRun(ctx context.Context, l launcher, v *benchVault, k, run int) (res burstResult, err error) {
	w, err := e.watch(ctx, l, v)
	if err != nil {
		return res, err
	}
	defer func() {
		if w != nil {
			_, serr := w.stop()
			if err == nil {
				err = serr
			}
		}
	}()
	w.quiesce(e.opts.debounce)
	before, err := agentruns.InTieOffs(v.root)
	if err != nil {
		return res, err
	}
	cpu0, err := proc.CPUTime(w.pid())
	if err != nil {
		return res, err
	}
	targets := v.pick(k)
	abs := make([]string, k)
	token := "burst-" + strconv.Itoa(run)
	for i, rel := range targets {
		abs[i] = v.abs(rel)
	}
	if res.span, err = edits.WriteAll(abs, token); err != nil {
		return res, err
	}
	t1 := time.Now() // the last write

	want := map[string]bool{}
	for _, t := range targets {
		want[t] = true
	}
	// Wait until every target ran (or no run came for a while: then some
	// are missing), then for stragglers and duplicates.
	wctx, cancel := context.WithTimeout(ctx, time.Duration(k)*50*time.Millisecond+2*time.Minute)
	defer cancel()
	if _, err := w.stamps.Wait(wctx, func(all []agentruns.Stamp) bool {
		seen := 0
		for s := range agentruns.Tally(all) {
			if want[s] {
				seen++
			}
		}
		return seen == k || w.exited() != nil
	}); err != nil {
		e.logf("burst: not every changed strand ran: %v", err)
	}
	if err := w.exited(); err != nil {
		return res, err
	}
	all, err := w.stamps.Settle(ctx, 2*e.opts.debounce+2*time.Second)
	if err != nil {
		return res, err
	}
	started := w.log.Count(knotdlog.MsgRunStarted)
	if err := w.log.Wait(wctx, runsFinished(started)); err != nil {
		return res, err
	}
	mem, err := proc.Memory(w.pid())
	if err != nil {
		return res, err
	}
	if err := w.heapSnapshot(ctx); err != nil {
		return res, err
	}
	cpu1, err := proc.CPUTime(w.pid())
	if err != nil {
		return res, err
	}
	// What the daemon keeps once it is idle again: knotd gives memory
	// back at its next 10-second check after the work.
	select {
	case <-time.After(idleAgain):
	case <-ctx.Done():
		return res, ctx.Err()
	}
	idle, err := proc.Memory(w.pid())
	if err != nil {
		return res, err
	}
	res.idleRSS = idle.RSS
	lines := w.log.Snapshot()
	ps, err := w.stop()
	w = nil
	if err != nil {
		return res, err
	}
	res.cpu = cpu1 - cpu0
	res.peak = max(mem.Peak, proc.MaxRSS(ps))

	runs := agentruns.Tally(all)
	delete(runs, probeOf(all))
	res.missed, res.extra = agentruns.ExactlyOnce(runs, targets)
	after, err := agentruns.InTieOffs(v.root)
	if err != nil {
		return res, err
	}
	m, x := agentruns.ExactlyOnce(agentruns.Added(before, after), targets)
	res.badSections = m + x

	var first, last time.Time
	for _, s := range all {
		if !want[s.Strand] {
			continue
		}
		if first.IsZero() || s.At.Before(first) {
			first = s.At
		}
		if s.At.After(last) {
			last = s.At
		}
	}
	if d := last.Sub(first); d > 0 {
		res.rate = float64(len(runs)-1) / d.Seconds()
	}
	var lastEnd time.Time
	var inAgent time.Duration
	finishedRuns := 0
	for _, ln := range lines {
		if ln.Msg == knotdlog.MsgRunFinished && want[ln.Strand] {
			finishedRuns++
			inAgent += time.Duration(ln.Duration)
			if ln.Time.After(lastEnd) {
				lastEnd = ln.Time
			}
		}
		if ln.Msg == knotdlog.MsgOverflow || (len(ln.Msg) > len(knotdlog.MsgOverflow) && ln.Msg[:len(knotdlog.MsgOverflow)] == knotdlog.MsgOverflow) {
			res.overflow = true
		}
	}
	res.drain = lastEnd.Sub(t1.Add(e.opts.debounce))
	if busy := lastEnd.Sub(first); busy > 0 && finishedRuns > 0 {
		// Worker time is concurrency × the busy span; the agent's part
		// of it is the sum of the logged run durations.
		res.agentShare = inAgent.Seconds() / (float64(e.opts.concurrency) * busy.Seconds())
	}

	spawn, err := e.spawnPool(ctx, abs, e.opts.concurrency)
	if err != nil {
		return res, err
	}
	res.spawnRate = float64(k) / spawn.Seconds()
	return res, nil
}

// probeOf returns the start-up probe's strand among the stamps: the one
// named bench-probe-*.
func probeOf(all []agentruns.Stamp) string {
	for _, s := range all {
		if len(s.Strand) > 12 && s.Strand[:12] == "bench-probe-" {
			return s.Strand
		}
	}
	return ""
}
