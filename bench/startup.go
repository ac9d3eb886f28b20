package main

import (
	"context"
	"fmt"
	"time"

	"github.com/knotd/knotd/bench/internal/proc"
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
func startup(ctx context.Context, e *env, l launcher) ([]row, error) {
	var rows []row
	for _, n := range e.opts.sizes {
		v, err := e.vault(ctx, n)
		if err != nil {
			return rows, err
		}
		var finds, watchT, walkT, watchPeak, onceT, oncePeak []float64
		for run := range e.opts.runs {
			e.logf("startup: run %d/%d on %s strands", run+1, e.opts.runs, thousands(n))
			if _, err := findTime(ctx, v.root); err != nil { // warm the cache
				return rows, err
			}
			f, err := findTime(ctx, v.root)
			if err != nil {
				return rows, err
			}
			finds = append(finds, ms(f))

			w, err := e.watch(ctx, l, v)
			if err != nil {
				return rows, err
			}
			watchT = append(watchT, ms(w.ready.Sub(w.start)))
			if err := w.heapSnapshot(ctx); err != nil {
				return rows, err
			}
			walkT = append(walkT, ms(time.Duration(w.watching.Took)))
			ps, err := w.stop()
			if err != nil {
				return rows, err
			}
			watchPeak = append(watchPeak, mib(max(w.mem.Peak, proc.MaxRSS(ps))))

			res, err := e.once(ctx, l, v.root, e.path("stamps"))
			if err != nil {
				return rows, err
			}
			if c := countMsg(res.lines, msgRunStarted); c != 0 {
				return rows, fmt.Errorf("startup: knotd --once ran %d strands of an unchanged vault", c)
			}
			onceT, oncePeak = append(onceT, ms(res.wall)), append(oncePeak, mib(res.peak))
		}
		scen := fmt.Sprintf("2 startup (%s strands, %s dirs)", thousands(n), thousands(v.dirs+1))
		fm := median(finds)
		base := formatNum(fm) + " ms (find)"
		// The budget is for 100k strands; a smaller vault's figure
		// is mostly the cost of starting a process that find does not have.
		budget := func(r row) row {
			if n >= budgetStrands {
				return r.ratioBudget(2)
			}
			return r
		}
		rows = append(rows,
			budget(newRow(scen, "watch: exec → watches set and catch-up reconciled", formatNum(median(watchT))+" ms").
				withBase(base, median(ratios(watchT, finds)))).profiled("startup", n),
			newRow(scen, "of which walk + watch (knotd's \"took\")", formatNum(median(walkT))+" ms").
				withBase(base, median(ratios(walkT, finds))),
			budget(newRow(scen, "--once, nothing changed: exec → exit", formatNum(median(onceT))+" ms").
				withBase(base, median(ratios(onceT, finds)))).profiled("startup", n),
			newRow(scen, "peak RSS, watch start-up", formatNum(median(watchPeak))+" MiB"),
			newRow(scen, "peak RSS, --once", formatNum(median(oncePeak))+" MiB"),
			newRow(scen, "first contact: adopt (--once, once)", formatNum(ms(v.adopt.wall))+" ms").
				withBase(base, ms(v.adopt.wall)/fm),
		)
	}
	return rows, nil
}

// countMsg counts the lines with message msg.
func countMsg(ls []logLine, msg string) int {
	n := 0
	for _, l := range ls {
		if l.Msg == msg {
			n++
		}
	}
	return n
}
