package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/knotd/knotd/bench/internal/edits"
	"github.com/knotd/knotd/bench/internal/profiled"
	"github.com/knotd/knotd/bench/internal/stats"
	"github.com/knotd/knotd/bench/internal/table"
	"github.com/knotd/knotd/bench/internal/vaultgen"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/knotd/knotd/internal/vault"
)

// historyStrand is the strand of the history scenario's one-note vault.
const historyStrand = "notes/plan.md"

// history measures scenario 5 in process: the cost of a run's tie-off
// work when the tie-off holds 10 sections and when it holds -sections
// (100,000), measured one after the other in the same run:
//
//   - tieoff.Append of one section (the file is cut back to its size
//     after each append, outside the timer, so it keeps its size);
//   - tieoff.Tail of the newest 5 sections within 64 KiB, the read the
//     vault does for every prompt (vault.request);
//   - vault.DryRun of the modified strand, which prints exactly the prompt
//     a run would send: its bytes, and its time (it opens the vault each
//     time, so it includes the state store's open).
//
// Each is a testing.Benchmark (ns/op). Budgets: append and tail within 2×,
// prompt bytes flat.
func history(ctx context.Context, e *env, l launcher) (rows []table.Row, err error) {
	small, large := 10, e.opts.sections
	if l.profiles != "" {
		stop, err := profiled.InProcess(l.profiles)
		if err != nil {
			return nil, err
		}
		defer func() {
			if serr := stop(); err == nil {
				err = serr
			}
		}()
	}
	type figures struct{ appendNs, tailNs, dryNs, promptBytes float64 }
	measure := func(dir string, sections int) (figures, error) {
		var f figures
		root := filepath.Join(dir, "vault")
		if err := historyVault(ctx, root, e.stateHome(), sections); err != nil {
			return f, err
		}
		tpath := filepath.Join(root, filepath.FromSlash(strings.TrimSuffix(historyStrand, ".md")+".tieoff.md"))
		var berr error
		f.appendNs = nsPerOp(testing.Benchmark(func(b *testing.B) { berr = benchAppend(b, tpath) }))
		if berr != nil {
			return f, berr
		}
		f.tailNs = nsPerOp(testing.Benchmark(func(b *testing.B) {
			for b.Loop() {
				if _, err := tailAt(tpath); err != nil {
					berr = err
					b.SkipNow()
				}
			}
		}))
		if berr != nil {
			return f, berr
		}
		var out bytes.Buffer
		opts := vault.Options{ConfigDir: e.xdg, ConfigFile: e.configFile, StateHome: e.stateHome()}
		if err := vault.DryRun(ctx, root, opts, vault.OnceOptions{}, &out); err != nil {
			return f, err
		}
		prompt, err := dryRunPrompt(out.String())
		if err != nil {
			return f, err
		}
		f.promptBytes = float64(len(prompt))
		f.dryNs = nsPerOp(testing.Benchmark(func(b *testing.B) {
			for b.Loop() {
				if err := vault.DryRun(ctx, root, opts, vault.OnceOptions{}, io.Discard); err != nil {
					berr = err
					b.SkipNow()
				}
			}
		}))
		return f, berr
	}
	var appendR, tailR, dryR, bytesR, appendS, appendL, tailS, tailL, dryS, dryL, bytesS, bytesL []float64
	for run := range e.opts.runs {
		e.logf("history: run %d/%d, tie-offs of %s and %s sections", run+1, e.opts.runs, stats.Thousands(small), stats.Thousands(large))
		s, err := measure(e.path("history-small"), small)
		if err != nil {
			return nil, err
		}
		g, err := measure(e.path("history-large"), large)
		if err != nil {
			return nil, err
		}
		appendS, appendL = append(appendS, s.appendNs/1e6), append(appendL, g.appendNs/1e6)
		tailS, tailL = append(tailS, s.tailNs/1e3), append(tailL, g.tailNs/1e3)
		dryS, dryL = append(dryS, s.dryNs/1e6), append(dryL, g.dryNs/1e6)
		bytesS, bytesL = append(bytesS, s.promptBytes), append(bytesL, g.promptBytes)
		appendR, tailR = append(appendR, g.appendNs/s.appendNs), append(tailR, g.tailNs/s.tailNs)
		dryR, bytesR = append(dryR, g.dryNs/s.dryNs), append(bytesR, g.promptBytes/s.promptBytes)
	}
	scen := fmt.Sprintf("5 history (%s vs %s sections)", stats.Thousands(large), stats.Thousands(small))
	return []table.Row{
		table.NewRow(scen, "tieoff.Append (with fsync)", stats.Format(stats.Median(appendL))+" ms").
			WithBase(stats.Format(stats.Median(appendS))+" ms", stats.Median(appendR)).RatioBudget(2).Profiled("history", 0),
		table.NewRow(scen, "tieoff.Tail, 5 newest sections (per prompt)", stats.Format(stats.Median(tailL))+" µs").
			WithBase(stats.Format(stats.Median(tailS))+" µs", stats.Median(tailR)).RatioBudget(2).Profiled("history", 0),
		table.NewRow(scen, "prompt bytes (vault.DryRun)", stats.Format(stats.Median(bytesL))).
			WithBase(stats.Format(stats.Median(bytesS)), stats.Median(bytesR)).RatioBudget(1.05).Profiled("history", 0),
		table.NewRow(scen, "vault.DryRun of the strand (opens the vault)", stats.Format(stats.Median(dryL))+" ms").
			WithBase(stats.Format(stats.Median(dryS))+" ms", stats.Median(dryR)),
	}, nil
}

func nsPerOp(r testing.BenchmarkResult) float64 {
	if r.N == 0 {
		return 0
	}
	return float64(r.T.Nanoseconds()) / float64(r.N)
}

// benchAppend appends one section per iteration, cutting the file back to
// its size before each (outside the timer).
func benchAppend(b *testing.B, path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	sec := tieoff.Section{Event: strand.Modified, Strand: historyStrand, Time: time.Now(), RunID: uuid.Must(uuid.NewV7()).String(), Body: reply(0)}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		if err := os.Truncate(path, fi.Size()); err != nil {
			return err
		}
		b.StartTimer()
		if _, err := appendAt(path, sec); err != nil {
			return err
		}
	}
	return nil
}

// appendAt is tieoff.Append on the file at path, through a root opened on
// its directory as knotd opens the vault.
func appendAt(path string, s tieoff.Section) (int64, error) {
	r, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return 0, err
	}
	defer r.Close()
	return tieoff.Append(r, filepath.Base(path), s)
}

// tailAt is tieoff.Tail of the file at path, 5 sections within 64 KiB.
func tailAt(path string) (tieoff.Window, error) {
	r, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return tieoff.Window{}, err
	}
	defer r.Close()
	return tieoff.Tail(r, filepath.Base(path), 5, 64<<10)
}

// historyVault makes a vault of one strand that knotd has processed,
// whose tie-off holds the given number of sections, and which has since
// been modified: the next run would be a Modified run with that history.
func historyVault(ctx context.Context, root, home string, sections int) error {
	abs := filepath.Join(root, filepath.FromSlash(historyStrand))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return err
	}
	rels := []string{historyStrand}
	if err := os.WriteFile(abs, vaultgen.NoteContent(5, 0, rels), 0o644); err != nil {
		return err
	}
	v, err := vault.Open(root, vault.Options{StateHome: home})
	if err != nil {
		return err
	}
	_, err = v.Once(ctx, vault.OnceOptions{}) // first contact: adopt
	if cerr := v.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := writeTieOff(strings.TrimSuffix(abs, ".md")+".tieoff.md", sections); err != nil {
		return err
	}
	return edits.Append(abs, "history")
}

// writeTieOff writes a tie-off of n sections in one go. The separator
// between sections is learnt from tieoff.Append itself (two appends to a
// scratch file), so the file is what n appends would have made.
func writeTieOff(path string, n int) (err error) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	section := func(i int) tieoff.Section {
		return tieoff.Section{Event: strand.Modified, Strand: historyStrand, Time: t0.Add(time.Duration(i) * time.Minute),
			RunID: uuid.Must(uuid.NewV7()).String(), Body: reply(i)}
	}
	scratch := path + ".scratch"
	if _, err := appendAt(scratch, section(0)); err != nil {
		return err
	}
	off, err := appendAt(scratch, section(1))
	if err != nil {
		return err
	}
	first, err := tieoff.Format(section(0))
	if err != nil {
		return err
	}
	b, err := os.ReadFile(scratch)
	if err != nil {
		return err
	}
	if err := os.Remove(scratch); err != nil {
		return err
	}
	sep := b[len(first):off]

	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	var buf bytes.Buffer
	for i := range n {
		if i > 0 {
			buf.Write(sep)
		}
		s, err := tieoff.Format(section(i))
		if err != nil {
			return err
		}
		buf.Write(s)
		if buf.Len() > 1<<20 {
			if _, err := f.Write(buf.Bytes()); err != nil {
				return err
			}
			buf.Reset()
		}
	}
	_, err = f.Write(buf.Bytes())
	return err
}

// reply is the i-th synthetic agent reply: a few hundred bytes of text
// with a list, like a short review.
func reply(i int) string {
	return fmt.Sprintf("Reviewed the plan (turn %d).\n\n- The budget section still lacks numbers.\n- Two tasks are done; mark them.\n- Consider linking the meeting notes.\n\nNothing else changed since the previous version; the outline reads well.", i+1)
}

// dryRunPrompt extracts the one prompt from vault.DryRun's output:
// "==> EVENT STRAND (agent NAME)\n" then the prompt then a blank line.
func dryRunPrompt(out string) (string, error) {
	head, rest, ok := strings.Cut(out, "\n")
	if !ok || !strings.HasPrefix(head, "==> Modified "+historyStrand) {
		return "", fmt.Errorf("history: unexpected dry run output %q", table.FirstLine(out))
	}
	if strings.Contains(rest, "\n==> ") {
		return "", fmt.Errorf("history: the dry run shows more than one strand")
	}
	return strings.TrimSuffix(rest, "\n\n"), nil
}
