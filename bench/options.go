package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/knotd/knotd/bench/internal/conversation"
)

// scenarioNames are the scenarios in the order they run. peers comes last
// because it leaves its vault's changes unprocessed (it re-adopts it).
var scenarioNames = []string{"history", "startup", "once", "reaction", "burst", "idle", "conversation", "peers"}

// options are knotbench's command line.
type options struct {
	scenarios   []string
	sizes       []int
	runs        int
	quick       bool
	idle        time.Duration
	samples     int
	burst       int
	sections    int
	debounce    time.Duration
	concurrency int
	results     string
	work        string
	keep        bool
	profile     string
	turns       int
	clis        []string
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	var scen, sizes, clis string
	fs := flag.NewFlagSet("knotbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&scen, "scenarios", "all", "comma-separated scenarios to run: "+strings.Join(scenarioNames, ", ")+", or all")
	fs.StringVar(&sizes, "sizes", "1k,10k,100k", "vault sizes in strands; reaction and peers use 10k (or the nearest), burst and idle the largest")
	fs.IntVar(&o.runs, "runs", 3, "runs per figure; the table shows medians")
	fs.BoolVar(&o.quick, "quick", false, "a CI-sized run: -sizes 1k,10k -runs 1 -idle 10s -samples 50 -burst 1000 -turns 10 (flags given explicitly win)")
	fs.DurationVar(&o.idle, "idle", time.Minute, "how long the idle scenario watches an unchanging vault")
	fs.IntVar(&o.samples, "samples", 200, "reaction: settled changes measured per run (p99 needs 100 or more)")
	fs.IntVar(&o.burst, "burst", 10000, "burst: strands changed within one second")
	fs.IntVar(&o.sections, "sections", 100000, "history: tie-off sections of the long history (against 10)")
	fs.DurationVar(&o.debounce, "debounce", 100*time.Millisecond, "knotd's quiet period (--debounce) in every scenario")
	fs.IntVar(&o.concurrency, "concurrency", 2, "knotd's --concurrency in every scenario")
	fs.StringVar(&o.results, "results", "", "directory for profiles and logs (default .cache/bench/TIME in the module)")
	fs.StringVar(&o.work, "work", "", "directory for the temporary vaults (default $TMPDIR)")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary vaults and binaries")
	fs.IntVar(&o.turns, "turns", 50, "conversation: turns per CLI (the new note, then one saved line each; the table shows turns 1, 2, 3, 10 and the last)")
	fs.StringVar(&clis, "clis", strings.Join(conversation.CLINames(), ","), "conversation: the agent CLIs to drive, each against its API stand-in")
	fs.StringVar(&o.profile, "profile", "auto", "scenario to run again under the profiler: auto (the worst figure's), none, or NAME[:SIZE] (startup:100k)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q (see -help)", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.quick {
		quick := map[string]func(){
			"sizes":   func() { sizes = "1k,10k" },
			"runs":    func() { o.runs = 1 },
			"idle":    func() { o.idle = 10 * time.Second },
			"samples": func() { o.samples = 50 },
			"burst":   func() { o.burst = 1000 },
			"turns":   func() { o.turns = 10 },
		}
		for name, apply := range quick {
			if !set[name] {
				apply()
			}
		}
	}
	var err error
	if o.scenarios, err = parseScenarios(scen); err != nil {
		return o, err
	}
	if o.sizes, err = parseSizes(sizes); err != nil {
		return o, err
	}
	for _, c := range strings.Split(clis, ",") {
		c = strings.TrimSpace(c)
		if !slices.Contains(conversation.CLINames(), c) {
			return o, fmt.Errorf("-clis: unknown CLI %q (want %s)", c, strings.Join(conversation.CLINames(), ", "))
		}
		o.clis = append(o.clis, c)
	}
	switch {
	case o.runs < 1, o.samples < 1, o.burst < 1, o.sections < 11, o.concurrency < 1, o.turns < 1:
		return o, errors.New("-runs, -samples, -burst, -concurrency and -turns must be positive, -sections above 10")
	case o.idle < time.Second:
		return o, errors.New("-idle must be at least 1s")
	case o.debounce < 10*time.Millisecond:
		return o, errors.New("-debounce must be at least 10ms")
	}
	if _, _, err := parseProfile(o.profile); err != nil {
		return o, err
	}
	return o, nil
}

// parseProfile reads -profile: auto, none, or a scenario name with an
// optional vault size (0: the sizes of -sizes).
func parseProfile(s string) (name string, size int, err error) {
	if s == "auto" || s == "none" {
		return s, 0, nil
	}
	name, sz, hasSize := strings.Cut(s, ":")
	if name == "conversation" {
		return "", 0, fmt.Errorf("-profile %q: the conversation scenario is not profiled (its time is the agent CLIs')", s)
	}
	if !slices.Contains(scenarioNames, name) {
		return "", 0, fmt.Errorf("-profile %q: want auto, none or a scenario name (%s), optionally with :SIZE", s, strings.Join(scenarioNames, ", "))
	}
	if hasSize {
		sizes, err := parseSizes(sz)
		if err != nil || len(sizes) != 1 {
			return "", 0, fmt.Errorf("-profile %q: bad size %q", s, sz)
		}
		size = sizes[0]
	}
	return name, size, nil
}

func parseScenarios(s string) ([]string, error) {
	if s == "all" {
		return scenarioNames, nil
	}
	var want []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(scenarioNames, name) {
			return nil, fmt.Errorf("-scenarios: unknown scenario %q (want %s)", name, strings.Join(scenarioNames, ", "))
		}
		want = append(want, name)
	}
	// Run in the canonical order whatever order they were given in.
	var out []string
	for _, name := range scenarioNames {
		if slices.Contains(want, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// parseSizes reads "1k,10k,100k" (k = 1,000) into sorted strand counts.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		mult := 1
		if rest, ok := strings.CutSuffix(f, "k"); ok {
			f, mult = rest, 1000
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-sizes: %q is not a positive number of strands", f)
		}
		if !slices.Contains(out, n*mult) {
			out = append(out, n*mult)
		}
	}
	slices.Sort(out)
	return out, nil
}

// nearest returns the size closest to want.
func nearest(sizes []int, want int) int {
	best := sizes[0]
	for _, s := range sizes {
		if abs(s-want) < abs(best-want) {
			best = s
		}
	}
	return best
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
