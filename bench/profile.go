package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/knotd/knotd/bench/internal/perftrace"
	"github.com/knotd/knotd/bench/internal/table"
	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/vault"
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
	top, err := pprofTop(ctx, cpus)
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

// pprofTop returns the head of go tool pprof -top for profiles, merged.
func pprofTop(ctx context.Context, profiles []string) (string, error) {
	args := append([]string{"tool", "pprof", "-top", "-nodecount=25"}, profiles...)
	out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, out)
	}
	// Drop pprof's preamble lines about the binary's path.
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "Duration:") || strings.HasPrefix(l, "Type:") {
			return strings.Join(lines[i:], "\n"), nil
		}
	}
	return string(out), nil
}

// profiledKnotd is knotbench's knotd-profiled command: knotd's --once and
// watch modes, wired as cmd/knotd wires them (JSON log, user config file,
// --debounce and --concurrency flags), with a CPU profile of the whole
// life of the process and a heap profile at its end. knotd itself has no
// profiling flag; this variant lets the harness see where its time goes.
func profiledKnotd(ctx context.Context, args []string, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("knotd-profiled", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cpuFile := fs.String("cpuprofile", "", "write a CPU profile to `FILE`")
	memFile := fs.String("memprofile", "", "write a heap profile to `FILE` at exit")
	once := fs.Bool("once", false, "one pass, then exit")
	configFile := fs.String("config", "", "user config `FILE`")
	debounce := fs.Duration("debounce", 0, "quiet period")
	concurrency := fs.Int("concurrency", 0, "agents at once")
	fs.String("log-format", "json", "accepted for knotd's command line; the log is always JSON")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: knotbench knotd-profiled [-cpuprofile FILE] [-memprofile FILE] [knotd flags] VAULT\n\n"+
			"knotd's watch mode and --once under the profiler. The heap profile is written when\n"+
			"a --once pass ends, and in watch mode each time the process gets SIGUSR1.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("knotd-profiled: want one VAULT")
	}
	root, err := filepath.Abs(fs.Arg(0))
	if err != nil {
		return err
	}
	var flags config.Settings
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "debounce":
			flags.Debounce = debounce
		case "concurrency":
			flags.Concurrency = concurrency
		}
	})
	if *cpuFile != "" {
		f, err := os.Create(*cpuFile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return errors.Join(err, f.Close())
		}
		defer func() {
			pprof.StopCPUProfile()
			if cerr := f.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}()
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil))
	if *memFile != "" && !*once {
		defer onHeapSignal(*memFile, log)()
	}
	v, err := vault.Open(root, vault.Options{Logger: log, ConfigFile: *configFile, Flags: flags})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := v.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if *once {
		start := time.Now()
		sum, err := v.Once(ctx, vault.OnceOptions{})
		if err != nil {
			return err
		}
		log.Info("once finished", "ran", sum.Ran, "failed", sum.Failed, "took", time.Since(start))
		if *memFile != "" {
			return writeHeap(*memFile)
		}
		return nil
	}
	return v.Watch(ctx, vault.WatchOptions{})
}

func writeHeap(path string) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	runtime.GC()
	return pprof.Lookup("heap").WriteTo(f, 0)
}
