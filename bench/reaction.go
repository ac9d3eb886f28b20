package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/knotd/knotd/bench/internal/agentruns"
	"github.com/knotd/knotd/bench/internal/edits"
	"github.com/knotd/knotd/bench/internal/knotdlog"
	"github.com/knotd/knotd/bench/internal/stats"
	"github.com/knotd/knotd/bench/internal/table"
)

// reaction measures scenario 1: from the settled moment (the end of the
// quiet period after a note's last write) to the agent's start, with the
// instant agent, in watch mode. The settled moment is taken as the time
// the save returned plus --debounce; the agent start is the agent's own
// stamp. So the figure includes the kernel's event delivery, the quiet
// period's timer, reconcile, the run's preparation, building the prompt,
// and spawning the
// agent. Changes are made one at a time, with the next save a quiet period
// after the previous run ended: -samples/2 notes that have not run before
// (knotd has no record of them yet), then the same notes
// again (later runs). The baseline is spawning the agent directly from Go,
// in the same run.
func reaction(ctx context.Context, e *env, l launcher) ([]table.Row, error) {
	n := nearest(e.opts.sizes, 10000)
	v, err := e.vault(ctx, n)
	if err != nil {
		return nil, err
	}
	var p50, p99, max_, first50, first99, later50, later99, spawn50, spawn99, toLog, toLog99, fromLog, fromLog99 []float64
	for run := range e.opts.runs {
		e.logf("reaction: run %d/%d, %d saves on %s strands", run+1, e.opts.runs, e.opts.samples, stats.Thousands(n))
		spawn, err := e.spawnLatencies(ctx, e.opts.samples)
		if err != nil {
			return nil, err
		}
		spawn50, spawn99 = append(spawn50, stats.Percentile(spawn, 50)), append(spawn99, stats.Percentile(spawn, 99))
		w, err := e.watch(ctx, l, v)
		if err != nil {
			return nil, err
		}
		w.quiesce(e.opts.debounce)
		notes := v.pick(max(1, e.opts.samples/2))
		over, logged, spawned, err := e.reactionSamples(ctx, w, v, append(notes, notes...))
		if _, serr := w.stop(); err == nil {
			err = serr
		}
		if err != nil {
			return nil, err
		}
		p50, p99 = append(p50, stats.Percentile(over, 50)), append(p99, stats.Percentile(over, 99))
		max_ = append(max_, stats.Percentile(over, 100))
		first, later := over[:len(notes)], over[len(notes):]
		first50, first99 = append(first50, stats.Percentile(first, 50)), append(first99, stats.Percentile(first, 99))
		later50, later99 = append(later50, stats.Percentile(later, 50)), append(later99, stats.Percentile(later, 99))
		toLog, fromLog = append(toLog, stats.Percentile(logged, 50)), append(fromLog, stats.Percentile(spawned, 50))
		toLog99, fromLog99 = append(toLog99, stats.Percentile(logged, 99)), append(fromLog99, stats.Percentile(spawned, 99))
	}
	scen := fmt.Sprintf("1 reaction (%s strands)", stats.Thousands(n))
	msf := func(x float64) string { return stats.Format(x) + " ms" }
	return []table.Row{
		table.NewRow(scen, "settled → agent start, p50", msf(stats.Median(p50))).
			WithBase(msf(stats.Median(spawn50)), stats.Median(table.Ratios(p50, spawn50))).Profiled("reaction", n),
		table.NewRow(scen, "settled → agent start, p99", msf(stats.Median(p99))).
			WithBase(msf(stats.Median(spawn99)), stats.Median(table.Ratios(p99, spawn99))).
			MaxBudget(stats.Median(p99), 10, "p99 < 10 ms").Profiled("reaction", n),
		table.NewRow(scen, "settled → agent start, max", msf(stats.Median(max_))),
		table.NewRow(scen, "first run of a note (no record yet): p50 / p99", msf(stats.Median(first50))+" / "+msf(stats.Median(first99))),
		table.NewRow(scen, "later runs of the same notes: p50 / p99", msf(stats.Median(later50))+" / "+msf(stats.Median(later99))),
		table.NewRow(scen, "of which settled → \"run started\" logged, p50 / p99", msf(stats.Median(toLog))+" / "+msf(stats.Median(toLog99))),
		table.NewRow(scen, "of which \"run started\" → agent start, p50 / p99", msf(stats.Median(fromLog))+" / "+msf(stats.Median(fromLog99))).
			WithBase(msf(stats.Median(spawn50))+" / "+msf(stats.Median(spawn99)), stats.Median(table.Ratios(fromLog, spawn50))),
	}, nil
}

// reactionSamples saves the notes one at a time and returns, in
// milliseconds, for each: settled moment → agent start, settled moment →
// knotd's "run started" line, and that line → agent start.
func (e *env) reactionSamples(ctx context.Context, w *watching, v *benchVault, notes []string) (over, logged, spawned []float64, err error) {
	d := e.opts.debounce
	for i, rel := range notes {
		ranBefore := countFinished(w.log.Snapshot(), rel)
		saved, err := edits.SaveTruncWrite(v.abs(rel), "reaction-"+strconv.Itoa(i))
		if err != nil {
			return nil, nil, nil, err
		}
		settled := saved.Add(d)
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second+d)
		before := agentruns.Tally(w.stamps.Seen())[rel]
		all, err := w.stamps.Wait(sctx, func(all []agentruns.Stamp) bool { return agentruns.Tally(all)[rel] > before })
		if err == nil {
			err = w.log.Wait(sctx, func(ls []knotdlog.Line) bool { return countFinished(ls, rel) > ranBefore })
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
		started, _ := findStrand(w.log.Snapshot(), knotdlog.MsgRunStarted, rel)
		over = append(over, stats.Ms(agentAt.Sub(settled)))
		logged = append(logged, stats.Ms(started.Time.Sub(settled)))
		spawned = append(spawned, stats.Ms(agentAt.Sub(started.Time)))
		// Let the run end before the next save, so that samples do not
		// overlap.
		time.Sleep(d + 50*time.Millisecond)
	}
	return over, logged, spawned, nil
}

// countFinished counts the finished runs of rel.
func countFinished(ls []knotdlog.Line, rel string) int {
	n := 0
	for _, l := range ls {
		if l.Msg == knotdlog.MsgRunFinished && l.Strand == rel {
			n++
		}
	}
	return n
}

// findStrand returns the last line with message msg about strand rel.
func findStrand(ls []knotdlog.Line, msg, rel string) (knotdlog.Line, bool) {
	for i := len(ls) - 1; i >= 0; i-- {
		if ls[i].Msg == msg && ls[i].Strand == rel {
			return ls[i], true
		}
	}
	return knotdlog.Line{}, false
}
