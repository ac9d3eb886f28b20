package vault

import (
	"os"
	"slices"
	"syscall"
	"testing"

	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/vault/internal/pipeline"

	"github.com/knotd/knotd/internal/tieoff"
)

// journaledRun leaves a run of note.md journaled but not appended, the
// state a crash between the journal write and the tie-off append leaves:
// the append fails (a full disk) after the journal entry is written. It
// returns the entry.
func journaledRun(t *testing.T, e *env) state.Pending {
	t.Helper()
	return journaledRunOf(t, e, "note.md")
}

// journaledRunOf is journaledRun for the note rel.
func journaledRunOf(t *testing.T, e *env, rel string) state.Pending {
	t.Helper()
	e.onceFresh()
	e.write(rel, "# Note\n")
	v0 := e.open()
	probeOf(v0).appendingFn = func(string) error { return syscall.ENOSPC }
	if sum := e.once(v0, false); sum.Failed != 1 {
		t.Fatalf("summary = %+v; want the run reported failed", sum)
	}
	e.close(v0)
	v, err := openStoreOnly(e)
	mustDo(t, err)
	defer v.Close()
	ps, err := v.Pendings()
	mustDo(t, err)
	if len(ps) != 1 {
		t.Fatalf("journal holds %d entries; want 1", len(ps))
	}
	return ps[0]
}

// openStoreOnly opens the state store without recovering, as a crashed
// knotd left it.
func openStoreOnly(e *env) (*state.Store, error) {
	return state.Open(e.statePath())
}

// TestOpen_RecoversJournaledRun: a run journaled but not appended is
// appended exactly once when the vault is opened, and committed.
func TestOpen_RecoversJournaledRun(t *testing.T) {
	e := newEnv(t)
	p := journaledRun(t, e)
	for range 2 { // the second Open finds nothing left to do
		v := e.open()
		if ps, err := v.store.Pendings(); err != nil || len(ps) != 0 {
			t.Errorf("journal after Open = %v, %v; want empty", ps, err)
		}
		rec, ok := record(t, v, "note.md")
		if !ok || rec.LastRunID != p.RunID || rec.Session == "" || rec.Turns != 1 {
			t.Errorf("record = %+v; want run %s committed", rec, p.RunID)
		}
		e.close(v)
	}
	secs := e.sections("note.md")
	if len(secs) != 1 || secs[0].RunID != p.RunID || secs[0].Event.String() != "Created" {
		t.Fatalf("sections = %+v; want the journaled run's section once", secs)
	}
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Errorf("the recovered run ran again: %+v", sum.Runs)
	}
}

// TestOpen_RecoveryDoesNotAppendTwice: the crash came after the append
// and before the commit: the section is already in the tie-off (its run
// marker says so), so recovery only commits.
func TestOpen_RecoveryDoesNotAppendTwice(t *testing.T) {
	e := newEnv(t)
	p := journaledRun(t, e)
	j, err := pipeline.DecodeJournal(p.Journal)
	mustDo(t, err)
	_, err = tieoff.Append(e.vaultRoot(), "note.tieoff.md", j.Section)
	mustDo(t, err)

	v := e.open()
	if rec, _ := record(t, v, "note.md"); rec.LastRunID != p.RunID {
		t.Errorf("record's last run = %s; want %s", rec.LastRunID, p.RunID)
	}
	e.close(v)
	if secs := e.sections("note.md"); len(secs) != 1 || secs[0].RunID != p.RunID {
		t.Errorf("sections = %+v; want the run's section exactly once", secs)
	}
}

// TestOpen_RecoveryKeepsNewerRecord: a run stayed journaled (its tie-off
// could not be written) while the same knotd committed a later run of the
// strand. Recovery at the next start appends the old reply, which is never
// lost, but does not put the strand's record back to the old version
// (that would run it again).
func TestOpen_RecoveryKeepsNewerRecord(t *testing.T) {
	e := newEnv(t)
	e.onceFresh()
	e.write("note.md", "# Note\n")
	v := e.open()
	probeOf(v).appendingFn = func(string) error { return syscall.ENOSPC }
	if sum := e.once(v, false); sum.Failed != 1 {
		t.Fatalf("summary = %+v; want the run reported failed", sum)
	}
	ps, err := v.store.Pendings()
	mustDo(t, err)
	if len(ps) != 1 {
		t.Fatalf("journal holds %d entries; want 1", len(ps))
	}
	old := ps[0]
	probeOf(v).appendingFn = nil // the disk has room again
	e.write("note.md", e.read("note.md")+"newer\n")
	sum := e.once(v, false)
	if sum.Ran != 1 || sum.OK != 1 {
		t.Fatalf("summary = %+v; want one ok run", sum)
	}
	newer := sum.Runs[0].RunID
	e.close(v)

	v = e.open()
	if rec, _ := record(t, v, "note.md"); rec.LastRunID != newer {
		t.Errorf("record's last run = %s; want the newer %s", rec.LastRunID, newer)
	}
	e.close(v)
	var ids []string
	for _, s := range e.sections("note.md") {
		ids = append(ids, s.RunID)
	}
	if !slices.Contains(ids, old.RunID) || !slices.Contains(ids, newer) || len(ids) != 2 {
		t.Errorf("sections' runs = %v; want %s and %s once each", ids, old.RunID, newer)
	}
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Errorf("a pass after recovery ran: %+v", sum.Runs)
	}
}

// TestOpen_UnfinishableRecoveryDoesNotBlock: a journaled run whose tie-off
// still cannot be written (its folder is gone, and may come back with a
// sync) is reported and kept; knotd opens and serves the rest of the
// vault.
func TestOpen_UnfinishableRecoveryDoesNotBlock(t *testing.T) {
	e := newEnv(t)
	p := journaledRunOf(t, e, "sub/note.md")
	mustDo(t, os.RemoveAll(e.abs("sub"))) // the tie-off has nowhere to go
	v := e.open()
	ps, err := v.store.Pendings()
	if err != nil || len(ps) != 1 || ps[0].RunID != p.RunID {
		t.Errorf("journal = %v, %v; want the entry kept", ps, err)
	}
	e.write("other.md", "# Other\n")
	if sum := e.once(v, false); !slices.ContainsFunc(sum.Runs, func(r RunReport) bool { return r.Strand == "other.md" && !r.Failed() }) {
		t.Errorf("the rest of the vault was not served: %+v", sum.Runs)
	}
}
