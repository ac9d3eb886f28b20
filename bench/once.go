package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/knotd/knotd/bench/internal/edits"
)

// onceChanged measures scenario 3 for each vault size: knotd --once with
// 1% of the strands changed and the instant agent. The baseline, measured
// in the same run, is find plus running the agent directly once per
// changed note at the same concurrency: the walk and the runs, nothing
// else. Every changed strand must run exactly once and no other: counted
// from the agent's stamps and from the run markers in the tie-offs.
func onceChanged(ctx context.Context, e *env, l launcher) ([]row, error) {
	var rows []row
	for _, n := range e.opts.sizes {
		k := max(1, n/100)
		v, err := e.vault(ctx, n)
		if err != nil {
			return rows, err
		}
		var knotdT, baseT, peak, cpu []float64
		missed, extra, badSections := 0, 0, 0
		for run := range e.opts.runs {
			e.logf("once: run %d/%d, %s of %s strands changed", run+1, e.opts.runs, thousands(k), thousands(n))
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
			baseT = append(baseT, ms(f+spawn))
			before, err := tieoffRuns(v.root)
			if err != nil {
				return rows, err
			}
			stamps := &stampLog{path: e.path("stamps")}
			res, err := e.once(ctx, l, v.root, stamps.path)
			if err != nil {
				return rows, err
			}
			knotdT, peak, cpu = append(knotdT, ms(res.wall)), append(peak, mib(res.peak)), append(cpu, ms(res.cpu))
			all, err := stamps.poll()
			if err != nil {
				return rows, err
			}
			m, x := exactlyOnce(tally(all), targets)
			missed, extra = missed+m, extra+x
			after, err := tieoffRuns(v.root)
			if err != nil {
				return rows, err
			}
			m, x = exactlyOnce(sectionsAdded(before, after), targets)
			badSections += m + x
		}
		scen := fmt.Sprintf("3 --once, 1%% changed (%s of %s)", thousands(k), thousands(n))
		bm := median(baseT)
		rows = append(rows,
			newRow(scen, "wall time", formatNum(median(knotdT))+" ms").
				withBase(formatNum(bm)+" ms (find + direct spawns)", median(ratios(knotdT, baseT))).profiled("once", n),
			newRow(scen, "every changed strand ran once, no other", fmt.Sprintf("%d missed, %d extra", missed, extra)).
				check(missed == 0 && extra == 0, "0 missed, 0 extra"),
			newRow(scen, "tie-off sections: +1 per changed strand only", fmt.Sprintf("%d wrong", badSections)).
				check(badSections == 0, "0 wrong"),
			newRow(scen, "CPU time (user+sys)", formatNum(median(cpu))+" ms"),
			newRow(scen, "peak RSS", formatNum(median(peak))+" MiB"),
		)
	}
	return rows, nil
}
