package vault

import (
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/strand"
)

// TestTrip_NoticeIsNotARun: the section a tripped breaker writes is a
// notice, not a failed run: "## Status: paused", and no run marker (no
// run id leads to a transcript that does not exist). knotd reads past it
// for what the note's last run answered: a device without knotd's state
// finds the note answered, and does not run it again.
func TestTrip_NoticeIsNotARun(t *testing.T) {
	e := newEnv(t)
	e.useAgent("", fakeagent.Echo)
	e.onceFresh()
	e.write("note.md", "# Note\n")
	sum := e.onceFresh()
	if sum.OK != 1 {
		t.Fatalf("summary %+v; want one ok run", sum)
	}
	v := e.open()
	v.trip("note.md", RunReport{Strand: "note.md", Event: strand.Created}, "it ran 4 times within 1h0m0s")
	sec, ok, err := v.pipe.NewestAnswer("note.md", nil)
	if err != nil || !ok || sec.RunID != sum.Runs[0].RunID {
		t.Errorf("newestAnswer = %+v, %v, %v; want the run's section (%s), past the notice", sec, ok, err, sum.Runs[0].RunID)
	}
	e.close(v)

	secs := e.sections("note.md")
	if len(secs) != 2 {
		t.Fatalf("sections %+v; want the run's and the notice", secs)
	}
	n := secs[1]
	if !n.Paused || n.Failed || n.RunID != "" || n.Hash != "" || !strings.Contains(n.Body, "knotd paused this note: it ran 4 times") {
		t.Errorf("notice = %+v; want paused, not failed, no run marker, saying why", n)
	}
	raw := e.read("note.tieoff.md")
	notice := raw[n.Offset:]
	if !strings.Contains(notice, "## Status: paused\n") || strings.Contains(notice, "Status: failed") || strings.Contains(notice, "knot:run") {
		t.Errorf("notice as written:\n%s\nwant ## Status: paused and no run marker", notice)
	}

	// Another device, without knotd's state: the note is answered.
	e.home = t.TempDir()
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Errorf("a device without state ran %+v; want the note answered by its last run", sum.Runs)
	}
}
