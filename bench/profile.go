package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/knotd/knotd/bench/internal/perftrace"
	"github.com/knotd/knotd/bench/internal/profiled"
	"github.com/knotd/knotd/bench/internal/table"
)

// profile runs the scenario of the worst figure (or the one -profile
// names) once more with the profiling variant of knotd, and returns notes
// that say where the profiles are and what they show. When perf is
// installed it then runs the scenario a third time, with knotd itself and
// perf trace -s attached, for the system calls' counts and times (a
// separate run: tracing every system call slows them down, which would
// distort the CPU profile).
func (e *env) profile(ctx context.Context, rows []table.Row) []string {
	name, size, _ := parseProfile(e.opts.profile) // checked by parseOptions
	why := ""
	switch name {
	case "none":
		return nil
	case "auto":
		i := table.Worst(rows)
		if i < 0 {
			return []string{"No figure with a budget to profile."}
		}
		name, size = rows[i].Profile, rows[i].ProfileSize
		why = fmt.Sprintf(" (worst figure: %s, %s = %s against %s)", rows[i].Scenario, rows[i].Metric, rows[i].Knotd, rows[i].Budget)
	}
	if ctx.Err() != nil {
		return nil
	}
	dir := filepath.Join(e.results, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return []string{"Profiling failed: " + err.Error()}
	}
	e.logf("profiling scenario %s%s into %s", name, why, dir)
	l := e.profiled
	l.profiles = dir
	saved := e.opts
	defer func() { e.opts = saved }()
	e.opts.runs = 1
	if size > 0 {
		e.opts.sizes = []int{size}
	}
	if _, err := scenarios[name](ctx, e, l); err != nil {
		return []string{fmt.Sprintf("Profiling scenario %s failed: %v", name, err)}
	}
	var trace []string
	if _, err := exec.LookPath("perf"); err != nil {
		trace = []string{"", "perf is not installed: no system call summary."}
	} else {
		e.logf("tracing the system calls of scenario %s", name)
		t := e.knotd
		t.trace = &perftrace.Tracer{Dir: dir}
		if _, err := scenarios[name](ctx, e, t); err != nil {
			trace = []string{"", fmt.Sprintf("Tracing scenario %s failed: %v", name, err)}
		} else {
			trace = t.trace.Table()
		}
	}
	notes := []string{fmt.Sprintf("Profiles of scenario %s%s, one run under knotbench knotd-profiled (the vault package as cmd/knotd wires it, with runtime/pprof): %s", name, why, dir)}
	cpus, _ := filepath.Glob(filepath.Join(dir, "*.cpu.pprof"))
	if len(cpus) == 0 {
		return append(notes, "No CPU profile was written.")
	}
	slices.Sort(cpus)
	top, err := profiled.Top(ctx, cpus)
	if err != nil {
		return append(notes, fmt.Sprintf("pprof: %v", err))
	}
	if err := os.WriteFile(filepath.Join(dir, "cpu.top.txt"), []byte(top), 0o644); err != nil {
		notes = append(notes, err.Error())
	}
	names := make([]string, len(cpus))
	for i, p := range cpus {
		names[i] = filepath.Base(p)
	}
	notes = append(notes, "", "```", "$ go tool pprof -top -nodecount=25 "+strings.Join(names, " "), strings.TrimRight(top, "\n"), "```")
	return append(notes, trace...)
}
