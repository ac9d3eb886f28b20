package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/knotd/knotd/bench/internal/conversation"
	"github.com/knotd/knotd/bench/internal/stats"
	"github.com/knotd/knotd/bench/internal/table"
)

// scenarioFunc measures one scenario with knotd started by l and returns
// its rows.
type scenarioFunc func(ctx context.Context, e *env, l launcher) ([]table.Row, error)

var scenarios = map[string]scenarioFunc{
	"history":      history,
	"startup":      startup,
	"once":         onceChanged,
	"reaction":     reaction,
	"burst":        burst,
	"idle":         idle,
	"conversation": conversationScenario,
	"peers":        peers,
}

// runAll runs the chosen scenarios, then profiles the worst figure, and
// returns the table's rows and the notes printed under it.
func (e *env) runAll(ctx context.Context) (rows []table.Row, notes []string) {
	start := time.Now()
	for _, name := range e.opts.scenarios {
		if ctx.Err() != nil {
			break
		}
		e.logf("scenario %s", name)
		rs, err := scenarios[name](ctx, e, e.knotd)
		if err != nil {
			e.logf("scenario %s failed: %v", name, err)
			r := table.NewRow(name, "error", "—").Check(false, table.FirstLine(err.Error()))
			rs = append(rs, r)
		}
		rows = append(rows, rs...)
	}
	notes = append(notes,
		fmt.Sprintf("Measured on %s; %d run(s) per figure (medians), debounce %s, concurrency %d; vaults of %s strands; %s in all.",
			machine(), e.opts.runs, e.opts.debounce, e.opts.concurrency, sizesText(e.opts.sizes), time.Since(start).Round(time.Second)),
		"Command: go run ./bench "+e.commandLine(),
	)
	notes = append(notes, e.notes...)
	notes = append(notes, e.profile(ctx, rows)...)
	return rows, notes
}

func sizesText(sizes []int) string {
	s := make([]string, len(sizes))
	for i, n := range sizes {
		s[i] = stats.Thousands(n)
	}
	return strings.Join(s, ", ")
}

// commandLine reconstructs the flags that matter for reproducing the run.
func (e *env) commandLine() string {
	o := e.opts
	var sizes []string
	for _, n := range o.sizes {
		if n%1000 == 0 {
			sizes = append(sizes, fmt.Sprintf("%dk", n/1000))
		} else {
			sizes = append(sizes, fmt.Sprint(n))
		}
	}
	return fmt.Sprintf("-scenarios %s -sizes %s -runs %d -idle %s -samples %d -burst %d -sections %d -debounce %s -concurrency %d -turns %d -clis %s",
		strings.Join(o.scenarios, ","), strings.Join(sizes, ","), o.runs, o.idle, o.samples, o.burst, o.sections, o.debounce, o.concurrency, o.turns, strings.Join(o.clis, ","))
}

// conversationScenario runs the conversation scenario (knotd itself, never
// the profiled variant: its time is the agent CLIs') and keeps its notes
// for under the table.
func conversationScenario(ctx context.Context, e *env, _ launcher) ([]table.Row, error) {
	rows, notes, err := conversation.Run(ctx, conversation.Harness{
		Knotd: e.knotd.argv[0], CLIs: e.opts.clis, Turns: e.opts.turns, Logf: e.logf, Path: e.path,
	})
	e.notes = append(e.notes, notes...)
	return rows, err
}
