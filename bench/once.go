package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/knotd/knotd/bench/internal/agentruns"
	"github.com/knotd/knotd/bench/internal/edits"
	"github.com/knotd/knotd/bench/internal/stats"
	"github.com/knotd/knotd/bench/internal/table"
)

// onceChanged measures scenario 3 for each vault size: knotd --once with
// 1% of the strands changed and the instant agent. The baseline, measured
// in the same run, is find plus running the agent directly once per
// changed note at the same concurrency: the walk and the runs, nothing
// else. Every changed strand must run exactly once and no other: counted
// from the agent's stamps and from the run markers in the tie-offs.
func onceChanged(ctx context.Context, e *env, l launcher) ([]table.Row, error) {
	var rows []table.Row
	for _, n := range e.opts.sizes {
		k := max(1, n/100)
		v, err := e.vault(ctx, n)
		if err != nil {
			return rows, err
		}
		var knotdT, baseT, peak, cpu []float64
		missed, extra, badSections := 0, 0, 0
		for run := range e.opts.runs {
			e.logf("once: run %d/%d, %s of %s strands changed", run+1, e.opts.runs, stats.Thousands(k), stats.Thousands(n))
			targets := v.pick(k)
			abs := make([]string, k)
			for i, rel := range targets {
				abs[i] = v.abs(rel)
				if err := edits.Append(abs[i], "once-"+strconv.Itoa(run)); err != nil {
					return rows, err
				}
			}
			f, err := findTime(ctx, v.root)
			if err != nil {
				return rows, err
			}
			spawn, err := e.spawnPool(ctx, abs, e.opts.concurrency)
			if err != nil {
				return rows, err
			}
			baseT = append(baseT, stats.Ms(f+spawn))
			before, err := agentruns.InTieOffs(v.root)
			if err != nil {
				return rows, err
			}
			stamps := &agentruns.Log{Path: e.path("stamps")}
			res, err := e.once(ctx, l, v.root, stamps.Path)
			if err != nil {
				return rows, err
			}
			knotdT, peak, cpu = append(knotdT, stats.Ms(res.wall)), append(peak, stats.MiB(res.peak)), append(cpu, stats.Ms(res.cpu))
			all, err := stamps.Poll()
			if err != nil {
				return rows, err
			}
			m, x := agentruns.ExactlyOnce(agentruns.Tally(all), targets)
			missed, extra = missed+m, extra+x
			after, err := agentruns.InTieOffs(v.root)
			if err != nil {
				return rows, err
			}
			m, x = agentruns.ExactlyOnce(agentruns.Added(before, after), targets)
			badSections += m + x
		}
		scen := fmt.Sprintf("3 --once, 1%% changed (%s of %s)", stats.Thousands(k), stats.Thousands(n))
		bm := stats.Median(baseT)
		rows = append(rows,
			table.NewRow(scen, "wall time", stats.Format(stats.Median(knotdT))+" ms").
				WithBase(stats.Format(bm)+" ms (find + direct spawns)", stats.Median(table.Ratios(knotdT, baseT))).Profiled("once", n),
			table.NewRow(scen, "every changed strand ran once, no other", fmt.Sprintf("%d missed, %d extra", missed, extra)).
				Check(missed == 0 && extra == 0, "0 missed, 0 extra"),
			table.NewRow(scen, "tie-off sections: +1 per changed strand only", fmt.Sprintf("%d wrong", badSections)).
				Check(badSections == 0, "0 wrong"),
			table.NewRow(scen, "CPU time (user+sys)", stats.Format(stats.Median(cpu))+" ms"),
			table.NewRow(scen, "peak RSS", stats.Format(stats.Median(peak))+" MiB"),
		)
	}
	return rows, nil
}
