package vault

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/knotd/knotd/internal/transcript"
	"github.com/knotd/knotd/internal/watcher"
)

// assertWhole checks the vault after a crash and a restart: every tie-off
// is whole sections, no run's section appears twice, every section's run
// has a readable transcript that records the section, every changed strand
// has exactly one section, no run is left journaled and a further pass
// finds nothing to do.
func (e *env) assertWhole(changed []string) {
	e.t.Helper()
	runs := map[string]string{}
	vr := e.vaultRoot()
	err := filepath.WalkDir(e.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, strand.TieOffExt) {
			return err
		}
		rel, err := filepath.Rel(e.root, p)
		if err != nil {
			return err
		}
		secs, perrs, err := tieoff.Read(vr, filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		if len(perrs) > 0 {
			e.t.Errorf("%s does not parse: %v", p, perrs)
		}
		for _, s := range secs {
			if s.Torn {
				e.t.Errorf("%s: torn section of run %s", p, s.RunID)
			}
			if prev, dup := runs[s.RunID]; dup {
				e.t.Errorf("run %s appears twice (%s and %s)", s.RunID, prev, p)
			}
			runs[s.RunID] = p
		}
		return nil
	})
	mustDo(e.t, err)
	// Every run in a tie-off has a whole transcript that says so.
	for id := range runs {
		evs, warns, err := transcript.ReadRun(e.runsDir(), id)
		switch {
		case err != nil:
			e.t.Errorf("transcript of run %s: %v", id, err)
		case len(warns) > 0:
			e.t.Errorf("transcript of run %s: %v", id, warns)
		case !slices.ContainsFunc(evs, func(ev transcript.Event) bool { return ev.Type == transcript.TieOffAppended }):
			e.t.Errorf("transcript of run %s does not record its tie-off section", id)
		}
	}
	for _, rel := range changed {
		if secs := e.sections(rel); len(secs) != 1 || secs[0].Failed {
			e.t.Errorf("%s: %d sections %v; want one successful section", rel, len(secs), e.events(rel))
		}
	}
	v := e.open()
	ps, err := v.store.Pendings()
	mustDo(e.t, err)
	if len(ps) != 0 {
		e.t.Errorf("%d runs are still journaled after a restart", len(ps))
	}
	pending, err := v.recon.Reconcile([]watcher.Hint{{Dir: true}})
	mustDo(e.t, err)
	if len(pending) != 0 {
		e.t.Errorf("reconcile after a restart finds %v pending", pending)
	}
	if sum := e.once(v, false); sum.Ran != 0 {
		e.t.Errorf("a pass after the restart ran again: %+v", sum.Runs)
	}
	e.close(v)
}
