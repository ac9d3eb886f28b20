package main

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// reaction measures scenario 1: from the settled moment (the end of the
// quiet period after a note's last write) to the agent's start, with the
// instant agent, in watch mode. The settled moment is taken as the time
// the save returned plus --debounce; the agent start is the agent's own
// stamp. So the figure includes the kernel's event delivery, the quiet
// period's timer, reconcile, the run's preparation (for a note's first
// run, writing its knot_session), building the prompt, and spawning the
// agent. Changes are made one at a time, each to a note that has not run
// before, with the next save a quiet period after the previous run ended.
// The baseline is spawning the agent directly from Go, in the same run.
func reaction(ctx context.Context, e *env, l launcher) ([]row, error) {
	n := nearest(e.opts.sizes, 10000)
	v, err := e.vault(ctx, n)
	if err != nil {
		return nil, err
	}
	var p50, p99, max_, spawn50, spawn99, toLog, fromLog []float64
	for run := range e.opts.runs {
		e.logf("reaction: run %d/%d, %d saves on %s strands", run+1, e.opts.runs, e.opts.samples, thousands(n))
		spawn, err := e.spawnLatencies(ctx, e.opts.samples)
		if err != nil {
			return nil, err
		}
		spawn50, spawn99 = append(spawn50, percentile(spawn, 50)), append(spawn99, percentile(spawn, 99))
		w, err := e.watch(ctx, l, v)
		if err != nil {
			return nil, err
		}
		w.quiesce(e.opts.debounce)
		over, logged, spawned, err := e.reactionSamples(ctx, w, v)
		if _, serr := w.stop(); err == nil {
			err = serr
		}
		if err != nil {
			return nil, err
		}
		p50, p99 = append(p50, percentile(over, 50)), append(p99, percentile(over, 99))
		max_ = append(max_, percentile(over, 100))
		toLog, fromLog = append(toLog, percentile(logged, 50)), append(fromLog, percentile(spawned, 50))
	}
	scen := fmt.Sprintf("1 reaction (%s strands)", thousands(n))
	msf := func(x float64) string { return formatNum(x) + " ms" }
	return []row{
		newRow(scen, "settled → agent start, p50", msf(median(p50))).
			withBase(msf(median(spawn50)), median(ratios(p50, spawn50))).profiled("reaction", n),
		newRow(scen, "settled → agent start, p99", msf(median(p99))).
			withBase(msf(median(spawn99)), median(ratios(p99, spawn99))).
			maxBudget(median(p99), 10, "p99 < 10 ms").profiled("reaction", n),
		newRow(scen, "settled → agent start, max", msf(median(max_))),
		newRow(scen, "of which settled → \"run started\" logged, p50", msf(median(toLog))),
		newRow(scen, "of which \"run started\" → agent start, p50", msf(median(fromLog))).
			withBase(msf(median(spawn50)), median(ratios(fromLog, spawn50))),
	}, nil
}

// reactionSamples saves e.opts.samples notes one at a time and returns,
// in milliseconds, for each: settled moment → agent start, settled moment
// → knotd's "run started" line, and that line → agent start.
func (e *env) reactionSamples(ctx context.Context, w *watching, v *benchVault) (over, logged, spawned []float64, err error) {
	d := e.opts.debounce
	for i, rel := range v.pick(e.opts.samples) {
		saved, err := saveTruncWrite(v.abs(rel), "reaction-"+strconv.Itoa(i))
		if err != nil {
			return nil, nil, nil, err
		}
		settled := saved.Add(d)
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second+d)
		all, err := w.stamps.wait(sctx, hasStrand(rel))
		if err == nil {
			err = w.log.wait(sctx, func(ls []logLine) bool { return finished(ls, rel) })
		}
		cancel()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("reaction: %s: %w", rel, err)
		}
		var agentAt time.Time
		for _, s := range all {
			if s.Strand == rel {
				agentAt = s.At
			}
		}
		started, _ := findStrand(w.log.snapshot(), msgRunStarted, rel)
		over = append(over, ms(agentAt.Sub(settled)))
		logged = append(logged, ms(started.Time.Sub(settled)))
		spawned = append(spawned, ms(agentAt.Sub(started.Time)))
		// Let knotd's own write (the note's new knot_session) settle
		// before the next save, so that samples do not overlap.
		time.Sleep(d + 50*time.Millisecond)
	}
	return over, logged, spawned, nil
}

// finished reports whether a run of rel has finished.
func finished(ls []logLine, rel string) bool {
	_, ok := findStrand(ls, msgRunFinished, rel)
	return ok
}

// findStrand returns the last line with message msg about strand rel.
func findStrand(ls []logLine, msg, rel string) (logLine, bool) {
	for i := len(ls) - 1; i >= 0; i-- {
		if ls[i].Msg == msg && ls[i].Strand == rel {
			return ls[i], true
		}
	}
	return logLine{}, false
}
