package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/knotd/knotd/bench/internal/agentruns"
	"github.com/knotd/knotd/bench/internal/edits"
	"github.com/knotd/knotd/bench/internal/knotdlog"
	"github.com/knotd/knotd/bench/internal/proc"
	"github.com/knotd/knotd/bench/internal/stats"
	"github.com/knotd/knotd/bench/internal/table"
	"github.com/knotd/knotd/internal/statedir"
)

// saveRounds is how many notes each editor-save pattern saves per run.
const saveRounds = 5

// tool is knotd or a peer doing knotd's job: run the agent when a note
// changes.
type tool struct {
	name string
	// quiet is the tool's own quiet period: knotd's --debounce, none for
	// the peers. Reaction is measured from the save plus quiet.
	quiet time.Duration
	// start starts the tool on the vault with the agent's stamps going to
	// stamps, and returns once it watches; stop ends it.
	start func(ctx context.Context, v *benchVault, stamps string) (stop func() error, err error)
	// dirty says the tool changes notes without knotd seeing it: knotd's
	// state must be adopted anew before knotd runs again.
	dirty bool
}

// peerFigures is what one tool did in one run.
type peerFigures struct {
	saveMissed, saveExtra   int
	latency                 []float64 // ms, first run after each save that should run
	burstMissed, burstExtra int
	burstDrain              time.Duration // last write to last agent start
	// byPattern counts the runs after each save pattern's saves, and the
	// runs the pattern should have caused.
	byPattern map[string][2]int
}

// peers measures scenario 7 on the 10k vault: knotd, a shell loop over
// inotifywait -m -r running the instant agent per event, and entr running
// it for the notes it watches, through the same editor saves (each
// pattern of edits.Saves() on saveRounds fresh notes, one at a time, with a
// window of the quiet period plus 500 ms for the runs to come) and the
// same burst (-burst notes changed at once). Counted per tool: changes
// that got no run (missed), runs beyond one per change or for saves that
// changed nothing (extra), and the reaction time: the first agent start
// after the save, less the tool's quiet period (knotd's only). A peer that
// is not installed is skipped (bench/install-peers installs them).
func peers(ctx context.Context, e *env, l launcher) ([]table.Row, error) {
	n := nearest(e.opts.sizes, 10000)
	v, err := e.vault(ctx, n)
	if err != nil {
		return nil, err
	}
	tools := []tool{{name: "knotd", quiet: e.opts.debounce, start: func(ctx context.Context, v *benchVault, stamps string) (func() error, error) {
		w, err := e.watchWith(ctx, l, v, stamps)
		if err != nil {
			return nil, err
		}
		w.quiesce(e.opts.debounce)
		return func() error { _, err := w.stop(); return err }, nil
	}}}
	var rows []table.Row
	scen := fmt.Sprintf("7 peers (%s strands)", stats.Thousands(n))
	for _, p := range []struct {
		bin   string
		label string
		start func(ctx context.Context, v *benchVault, stamps string) (func() error, error)
	}{
		{"inotifywait", "inotifywait -m -r loop", e.inotifyLoop},
		{"entr", "entr", e.entr},
	} {
		if _, err := exec.LookPath(p.bin); err != nil {
			rows = append(rows, table.SkipRow(scen, p.label, p.bin+" is not installed (run bench/install-peers)"))
			continue
		}
		tools = append(tools, tool{name: p.label, start: p.start, dirty: true})
	}

	figs := make([][]peerFigures, len(tools))
	dirty := false
	defer func() {
		if dirty {
			if rerr := e.readopt(ctx, v); rerr != nil {
				e.logf("peers: re-adopting the vault: %v", rerr)
			}
		}
	}()
	for run := range e.opts.runs {
		for i, t := range tools {
			if dirty && !t.dirty {
				if err := e.readopt(ctx, v); err != nil {
					return rows, err
				}
				dirty = false
			}
			e.logf("peers: run %d/%d, %s", run+1, e.opts.runs, t.name)
			f, err := e.peerRun(ctx, t, v)
			dirty = dirty || t.dirty
			if err != nil {
				return rows, fmt.Errorf("%s: %w", t.name, err)
			}
			figs[i] = append(figs[i], f)
		}
	}

	k := min(e.opts.burst, n)
	sum := func(fs []peerFigures, get func(peerFigures) int) int {
		total := 0
		for _, f := range fs {
			total += get(f)
		}
		return total
	}
	saves := saveRounds * len(edits.Saves(0)) * e.opts.runs
	summary := func(fs []peerFigures) (saveTxt, burstTxt string, lat, drain float64) {
		var lats, drains []float64
		for _, f := range fs {
			lats = append(lats, stats.Percentile(f.latency, 50))
			drains = append(drains, f.burstDrain.Seconds())
		}
		saveTxt = fmt.Sprintf("%d missed, %d extra", sum(fs, func(f peerFigures) int { return f.saveMissed }), sum(fs, func(f peerFigures) int { return f.saveExtra }))
		burstTxt = fmt.Sprintf("%d missed, %d extra", sum(fs, func(f peerFigures) int { return f.burstMissed }), sum(fs, func(f peerFigures) int { return f.burstExtra }))
		return saveTxt, burstTxt, stats.Median(lats), stats.Median(drains)
	}
	kSave, kBurst, kLat, kDrain := summary(figs[0])
	rows = append(rows,
		table.NewRow(scen, fmt.Sprintf("knotd: %d editor saves, missed / extra runs", saves), kSave).
			Check(strings.HasPrefix(kSave, "0 missed, 0 extra"), "0 missed, 0 extra"),
		table.NewRow(scen, fmt.Sprintf("knotd: burst of %s, missed / extra runs", stats.Thousands(k)), kBurst).
			Check(strings.HasPrefix(kBurst, "0 missed, 0 extra"), "0 missed, 0 extra"),
	)
	for i, t := range tools[1:] {
		fs := figs[i+1]
		pSave, pBurst, pLat, pDrain := summary(fs)
		var lr, dr []float64
		for j := range fs {
			lr = append(lr, stats.Percentile(figs[0][j].latency, 50)/stats.Percentile(fs[j].latency, 50))
			dr = append(dr, figs[0][j].burstDrain.Seconds()/fs[j].burstDrain.Seconds())
		}
		rows = append(rows,
			table.NewRow(scen, "editor saves, missed / extra runs: knotd vs "+t.name, kSave).WithBase(pSave, nanRatio()),
			table.NewRow(scen, "reaction p50 (knotd: after its quiet period) vs "+t.name, stats.Format(kLat)+" ms").
				WithBase(stats.Format(pLat)+" ms", stats.Median(lr)),
			table.NewRow(scen, "burst, missed / extra runs: knotd vs "+t.name, kBurst).WithBase(pBurst, nanRatio()),
			table.NewRow(scen, "burst, last write → last agent start: knotd vs "+t.name, stats.Format(kDrain)+" s").
				WithBase(stats.Format(pDrain)+" s", stats.Median(dr)),
		)
	}
	e.notes = append(e.notes, patternTable(scen, tools, figs)...)
	return rows, nil
}

// patternTable details the editor saves: agent runs per save pattern and
// tool, against the runs the saves should cause.
func patternTable(scen string, tools []tool, figs [][]peerFigures) []string {
	head := "| " + scen + ": agent runs per save pattern | expected |"
	rule := "| --- | ---: |"
	for _, t := range tools {
		head += " " + t.name + " |"
		rule += " ---: |"
	}
	lines := []string{"", head, rule}
	for _, s := range edits.Saves(0) {
		want := 0
		for _, f := range figs[0] {
			want += f.byPattern[s.Name][1]
		}
		line := fmt.Sprintf("| %s | %d |", s.Name, want)
		for i := range tools {
			got := 0
			for _, f := range figs[i] {
				got += f.byPattern[s.Name][0]
			}
			line += fmt.Sprintf(" %d |", got)
		}
		lines = append(lines, line)
	}
	return lines
}

func nanRatio() float64 { return stats.Median(nil) }

// peerRun starts the tool, makes the editor saves and the burst, stops
// it and counts.
func (e *env) peerRun(ctx context.Context, t tool, v *benchVault) (f peerFigures, err error) {
	stamps := &agentruns.Log{Path: e.path("peer-stamps"), Trim: v.root + string(os.PathSeparator)}
	stop, err := t.start(ctx, v, stamps.Path)
	if err != nil {
		return f, err
	}
	defer func() {
		if serr := stop(); err == nil {
			err = serr
		}
	}()
	if _, err := stamps.Settle(ctx, 300*time.Millisecond); err != nil { // the knotd probe's run
		return f, err
	}
	window := e.opts.debounce + 500*time.Millisecond
	for _, s := range edits.Saves(e.opts.debounce / 4) {
		for i, rel := range v.pick(saveRounds) {
			before, err := stamps.Poll()
			if err != nil {
				return f, err
			}
			seen := len(before)
			at, err := s.Do(v.abs(rel), fmt.Sprintf("peer-%d", i))
			if err != nil {
				return f, fmt.Errorf("%s: %w", s.Name, err)
			}
			time.Sleep(window)
			all, err := stamps.Poll()
			if err != nil {
				return f, err
			}
			runs := agentruns.Tally(all[seen:])
			want := []string{}
			if s.Runs == 1 {
				want = append(want, rel)
			}
			m, x := agentruns.ExactlyOnce(runs, want)
			if f.byPattern == nil {
				f.byPattern = map[string][2]int{}
			}
			c := f.byPattern[s.Name]
			f.byPattern[s.Name] = [2]int{c[0] + len(all) - seen, c[1] + s.Runs}
			f.saveMissed, f.saveExtra = f.saveMissed+m, f.saveExtra+x
			for _, st := range all[seen:] {
				if st.Strand == rel && s.Runs == 1 {
					f.latency = append(f.latency, stats.Ms(st.At.Sub(at.Add(t.quiet))))
					break
				}
			}
		}
	}

	k := min(e.opts.burst, len(v.rels))
	before, err := stamps.Poll()
	if err != nil {
		return f, err
	}
	seen := len(before)
	targets := v.pick(k)
	abs := make([]string, k)
	for i, rel := range targets {
		abs[i] = v.abs(rel)
	}
	if _, err := edits.WriteAll(abs, "peer-burst"); err != nil {
		return f, err
	}
	written := time.Now()
	bctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	all, err := stamps.Settle(bctx, t.quiet+3*time.Second)
	if err != nil {
		return f, err
	}
	f.burstMissed, f.burstExtra = agentruns.ExactlyOnce(agentruns.Tally(all[seen:]), targets)
	for _, st := range all[seen:] {
		if d := st.At.Sub(written); d > f.burstDrain {
			f.burstDrain = d
		}
	}
	return f, nil
}

// inotifyLoop starts the first peer: a shell loop over inotifywait -m -r
// that runs the agent, with the note as its prompt, for every
// close_write, moved_to or delete event on a .md file that is not a
// tie-off, as a user would write it.
func (e *env) inotifyLoop(ctx context.Context, v *benchVault, stamps string) (func() error, error) {
	const script = `inotifywait -m -r -e close_write,moved_to,delete --format '%w%f' "$1" |
while IFS= read -r p; do
  case "$p" in
    *.tieoff.md) ;;
    *.md) "$2" "$p" <"$p" >/dev/null ;;
  esac
done`
	cmd := exec.Command("bash", "-c", script, "peer", v.root, e.agent)
	cmd.Env = append(os.Environ(), "BENCH_STAMPS="+stamps)
	cmd.SysProcAttr = proc.NewGroup()
	log := knotdlog.NewBook()
	cmd.Stderr = log
	stop, err := startGroup(cmd)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	if err := log.WaitText(rctx, "Watches established"); err != nil {
		return nil, errors.Join(err, stop())
	}
	return stop, nil
}

// entr starts the second peer: entr watching every note of the vault,
// running the agent on the first changed file (/_) each time; -p
// postpones the first run until a change, -n is for no terminal.
func (e *env) entr(ctx context.Context, v *benchVault, stamps string) (func() error, error) {
	cmd := exec.Command("entr", "-n", "-p", e.agent, "-no-stdin", "/_")
	list := make([]string, len(v.rels))
	for i, rel := range v.rels {
		list[i] = v.abs(rel)
	}
	cmd.Stdin = strings.NewReader(strings.Join(list, "\n") + "\n")
	cmd.Env = append(os.Environ(), "BENCH_STAMPS="+stamps)
	cmd.SysProcAttr = proc.NewGroup()
	log := knotdlog.NewBook()
	cmd.Stderr = log
	stop, err := startGroup(cmd)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(startupTimeout)
	for {
		n, err := proc.InotifyWatches(cmd.Process.Pid)
		if err == nil && n >= len(list) {
			return stop, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, errors.Join(fmt.Errorf("entr set %d watches of %d%s", n, len(list), log.Tail()), err, stop())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startGroup starts cmd (in a process group of its own) and returns the
// function that stops the whole group and waits for it.
func startGroup(cmd *exec.Cmd) (stop func() error, err error) {
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // owned by stop, which waits for it
	return func() error {
		if err := proc.SignalGroup(cmd.Process.Pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("stop %s: %w", cmd.Path, err)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = proc.SignalGroup(cmd.Process.Pid, syscall.SIGKILL) // the wait below reports
			<-done
		}
		return nil // killed by our signal: its exit status says nothing
	}, nil
}

// readopt forgets knotd's state of the vault and adopts it again: after
// the peers changed it without knotd.
func (e *env) readopt(ctx context.Context, v *benchVault) error {
	f, ok, err := statedir.Find(e.stateHome(), v.root)
	if err != nil {
		return err
	}
	if ok {
		if err := os.RemoveAll(f.Dir); err != nil {
			return err
		}
	}
	return e.adopt(ctx, v)
}
