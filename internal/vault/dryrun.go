package vault

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/statedir"
	"github.com/knotd/knotd/internal/vault/internal/pipeline"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/watcher"
)

// DryRun prints, for each strand a --once pass would process, its event
// and the full prompt, and changes nothing: no agent runs, no strand,
// tie-off or state is written, and runs a crash left journaled are only
// counted. On a vault knotd has never seen it says how many strands the
// first pass would adopt, without creating knotd's state directory.
func DryRun(ctx context.Context, root string, opts Options, once OnceOptions, w io.Writer) (err error) {
	home := opts.StateHome
	if home == "" {
		if home, err = statedir.Home(); err != nil {
			return err
		}
		opts.StateHome = home
	}
	f, found, err := statedir.Find(home, root)
	if err != nil {
		return err
	}
	if found {
		_, err = os.Stat(f.StateFile())
		found = err == nil
	}
	if !found {
		if _, err := os.Lstat(filepath.Join(root, statedir.LegacyDir, statedir.StateFile)); err == nil {
			fmt.Fprintf(w, "knotd keeps its own files in the state directory (%s) now; a real start first moves the vault's %s/%s there, once. Until then a dry run sees the vault as on first contact.\n\n",
				home, statedir.LegacyDir, statedir.StateFile)
		}
	}
	if !found && !once.All {
		v, err := newVault(root, opts)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := v.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}()
		return v.dryFirstContact(w)
	}
	v, err := open(root, opts, true)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := v.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	_, seen, err := v.store.Adopted()
	if err != nil {
		return err
	}
	if !seen && !once.All {
		return v.dryFirstContact(w)
	}
	if ps, err := v.store.Pendings(); err != nil {
		return err
	} else if len(ps) > 0 {
		fmt.Fprintf(w, "%d finished runs were journaled before knotd stopped; the next real start appends their replies first\n\n", len(ps))
	}
	var pending []string
	if once.All {
		set := map[string]struct{}{}
		if err := v.recon.Walk("", false, func(rel string, _ fs.FileInfo) { set[rel] = struct{}{} }); err != nil {
			return err
		}
		if err := v.store.ForEach(func(r state.Record) error { set[r.Path] = struct{}{}; return nil }); err != nil {
			return err
		}
		pending = sortedKeys(set)
	} else if pending, err = v.recon.Reconcile([]watcher.Hint{{Dir: true}}); err != nil {
		return err
	}
	// The notes whose schedule is due (or late) would run too, as
	// Scheduled; a note also changed runs once, Scheduled.
	v.startSchedules()
	due := map[string]*agentrun.Occurrence{}
	for _, f := range v.dueSchedules() {
		if _, ok := due[f.Rel]; !ok && !slices.Contains(pending, f.Rel) {
			pending = append(pending, f.Rel)
		}
		due[f.Rel] = &f.Occ
	}
	if len(pending) == 0 {
		fmt.Fprintln(w, "nothing to do: every note is processed, and no schedule is due")
		return nil
	}
	var paused, deferred []string
	for _, rel := range pending {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		job := Job{FiredBy: agentrun.FiredByOnce, Force: once.All}
		if occ := due[rel]; occ != nil {
			job = Job{FiredBy: agentrun.FiredBySchedule, Scheduled: occ}
		}
		switch skip := v.pipe.Show(w, rel, job, v.prompt); {
		case skip == pipeline.PausedSkip:
			paused = append(paused, rel)
		case strings.HasPrefix(skip, pipeline.BudgetSkip):
			deferred = append(deferred, rel)
		}
	}
	if len(paused) > 0 {
		fmt.Fprintf(w, "not run, paused: %d (%s); knotd resume answers their changes\n", len(paused), strings.Join(paused, ", "))
	}
	if len(deferred) > 0 {
		fmt.Fprintf(w, "not run, waiting for the day's budget: %d (%s); they run when it allows, or now with knotd run\n", len(deferred), strings.Join(deferred, ", "))
	}
	return nil
}

// dryFirstContact says what the first pass over the vault would do.
func (v *Vault) dryFirstContact(w io.Writer) error {
	var a Adoption
	var runs []string
	err := v.adoption.survey(func(p adoptee) error {
		a.count(p.kind)
		switch p.kind {
		case changedKind:
			runs = append(runs, fmt.Sprintf("==> Modified %s: changed since its tie-off's last answer (run %s); the prompt shows no Changes, since knotd keeps no earlier version of it here", p.rec.Path, p.rec.LastRunID))
		case unansweredKind:
			runs = append(runs, fmt.Sprintf("==> Created %s: its tie-off holds no answer, and --no-adopt runs it", p.rec.Path))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if v.noAdopt {
		fmt.Fprintf(w, "first contact: knotd would record %d as answered by their tie-offs, run %d changed since their last answer, and run %d whose tie-off holds no answer (--no-adopt)\n",
			a.Answered, a.Changed, a.Unanswered)
		for _, r := range runs {
			fmt.Fprintln(w, r)
		}
		return nil
	}
	notes := "notes"
	if a.Adopted == 1 {
		notes = "note"
	}
	fmt.Fprintf(w, "first contact: knotd would adopt %d %s as processed and run nothing for them, record %d as answered by their tie-offs, and run %d changed since their last answer (use --all to run them all)\n",
		a.Adopted, notes, a.Answered, a.Changed)
	for _, r := range runs {
		fmt.Fprintln(w, r)
	}
	return nil
}

// prompt returns the prompt req would send.
func (v *Vault) prompt(req agentrun.Request) (string, error) {
	return v.runner.Load().Prompt(req)
}
