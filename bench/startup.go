package main

import (
	"context"
	"fmt"
	"time"

	"github.com/knotd/knotd/bench/internal/knotdlog"
	"github.com/knotd/knotd/bench/internal/proc"
	"github.com/knotd/knotd/bench/internal/stats"
	"github.com/knotd/knotd/bench/internal/table"
)

// budgetStrands is the vault size the start-up budget is set for.
const budgetStrands = 100_000

// startup measures scenario 2 for each vault size: how long knotd takes
// to walk, watch and reconcile an unchanged vault, and its peak RSS,
// against the find baseline of the issue run just before it.
//
// Two measures: watch mode, from exec to the end of the catch-up
// reconcile (see watch: the probe strand marks it; the walk-and-watch part
// alone is what knotd logs as "watcher: watching … took"), and
// --once on the adopted vault (reconcile only, nothing changed: exec to
// exit). The vault's pages are in the page cache for both and for find.
func startup(ctx context.Context, e *env, l launcher) ([]table.Row, error) {
	var rows []table.Row
	for _, n := range e.opts.sizes {
		v, err := e.vault(ctx, n)
		if err != nil {
			return rows, err
		}
		var finds, watchT, walkT, watchPeak, onceT, oncePeak []float64
		for run := range e.opts.runs {
			e.logf("startup: run %d/%d on %s strands", run+1, e.opts.runs, stats.Thousands(n))
			if _, err := findTime(ctx, v.root); err != nil { // warm the cache
				return rows, err
			}
			f, err := findTime(ctx, v.root)
			if err != nil {
				return rows, err
			}
			finds = append(finds, stats.Ms(f))

			w, err := e.watch(ctx, l, v)
			if err != nil {
				return rows, err
			}
			watchT = append(watchT, stats.Ms(w.ready.Sub(w.start)))
			if err := w.heapSnapshot(ctx); err != nil {
				return rows, err
			}
			walkT = append(walkT, stats.Ms(time.Duration(w.watching.Took)))
			ps, err := w.stop()
			if err != nil {
				return rows, err
			}
			watchPeak = append(watchPeak, stats.MiB(max(w.mem.Peak, proc.MaxRSS(ps))))

			res, err := e.once(ctx, l, v.root, e.path("stamps"))
			if err != nil {
				return rows, err
			}
			if c := knotdlog.CountMsg(res.lines, knotdlog.MsgRunStarted); c != 0 {
				return rows, fmt.Errorf("startup: knotd --once ran %d strands of an unchanged vault", c)
			}
			onceT, oncePeak = append(onceT, stats.Ms(res.wall)), append(oncePeak, stats.MiB(res.peak))
		}
		scen := fmt.Sprintf("2 startup (%s strands, %s dirs)", stats.Thousands(n), stats.Thousands(v.dirs+1))
		fm := stats.Median(finds)
		base := stats.Format(fm) + " ms (find)"
		// The budget is for 100k strands; a smaller vault's figure
		// is mostly the cost of starting a process that find does not have.
		budget := func(r table.Row) table.Row {
			if n >= budgetStrands {
				return r.RatioBudget(2)
			}
			return r
		}
		rows = append(rows,
			budget(table.NewRow(scen, "watch: exec → watches set and catch-up reconciled", stats.Format(stats.Median(watchT))+" ms").
				WithBase(base, stats.Median(table.Ratios(watchT, finds)))).Profiled("startup", n),
			table.NewRow(scen, "of which walk + watch (knotd's \"took\")", stats.Format(stats.Median(walkT))+" ms").
				WithBase(base, stats.Median(table.Ratios(walkT, finds))),
			budget(table.NewRow(scen, "--once, nothing changed: exec → exit", stats.Format(stats.Median(onceT))+" ms").
				WithBase(base, stats.Median(table.Ratios(onceT, finds)))).Profiled("startup", n),
			table.NewRow(scen, "peak RSS, watch start-up", stats.Format(stats.Median(watchPeak))+" MiB"),
			table.NewRow(scen, "peak RSS, --once", stats.Format(stats.Median(oncePeak))+" MiB"),
			table.NewRow(scen, "first contact: adopt (--once, once)", stats.Format(stats.Ms(v.adopt.wall))+" ms").
				WithBase(base, stats.Ms(v.adopt.wall)/fm),
		)
	}
	return rows, nil
}
