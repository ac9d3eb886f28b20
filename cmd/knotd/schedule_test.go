package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/schedule"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/stretchr/testify/require"
)

// scheduledSections returns the Scheduled sections of rel's tie-off.
func scheduledSections(t *testing.T, vault, rel string) []tieoff.Section {
	t.Helper()
	r, err := os.OpenRoot(vault)
	require.NoError(t, err)
	defer r.Close()
	secs, probs, err := tieoff.Read(r, rel[:len(rel)-len(".md")]+".tieoff.md")
	require.NoError(t, err)
	require.Empty(t, probs)
	var out []tieoff.Section
	for _, s := range secs {
		if s.Event == strand.Scheduled {
			out = append(out, s)
		}
	}
	return out
}

// TestOnce_ScheduleLate, through the real process: a note whose schedule
// last fired three days ago (its tie-off's Scheduled section says so; the
// state of this device knows nothing of it, as after a handover) is shown
// by --dry-run as a late Scheduled run, without a write; knotd --once runs
// it once, late, for the newest occurrence; a second --once runs nothing.
func TestOnce_ScheduleLate(t *testing.T) {
	v, _ := setup(t)
	note := filepath.Join(v, "brief.md")
	writeFile(t, note, "# Brief\n\nWhat is on today?\n")
	out, err := knotdProcess(t, "--once", v).CombinedOutput() // adopts
	require.NoError(t, err, "%s", out)

	sched, err := schedule.Parse("daily 07:00 UTC", nil)
	require.NoError(t, err)
	now := time.Now()
	latest := sched.Prev(now)
	before := latest.AddDate(0, 0, -3)
	sec, err := tieoff.Format(tieoff.Section{Event: strand.Scheduled, Strand: "brief.md", Time: before,
		RunID: "0190f3c2-7b1a-7c3d-9e2f-1a2b3c4d5e6f", Due: before, Body: "The brief of three days ago.\n"})
	require.NoError(t, err)
	writeFile(t, filepath.Join(v, "brief.tieoff.md"), string(sec))
	writeFile(t, note, "---\nknot_schedule: daily 07:00 UTC\n---\n# Brief\n\nWhat is on today?\n")

	out, err = knotdProcess(t, "--once", "--dry-run", v).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "==> Scheduled brief.md (agent digest)\n## Event Context\nEvent: Scheduled\n")
	require.Contains(t, string(out), "Fired-By: schedule\nSchedule: daily 07:00 UTC (UTC)\nDue: "+latest.UTC().Format(time.RFC3339)+"\nLate: ")
	require.Contains(t, string(out), "; stands for 3 occurrences since "+before.AddDate(0, 0, 1).UTC().Format(time.RFC3339))
	require.Len(t, scheduledSections(t, v, "brief.md"), 1, "the dry run wrote a section")

	out, err = knotdProcess(t, "--once", v).CombinedOutput()
	require.NoError(t, err, "%s", out)
	secs := scheduledSections(t, v, "brief.md")
	require.Len(t, secs, 2, "knotd --once ran the late schedule %d times; want once\n%s", len(secs)-1, out)
	require.True(t, secs[1].Due.Equal(latest), "the late run stands for %v; want the newest occurrence %v", secs[1].Due, latest)

	out, err = knotdProcess(t, "--once", v).CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Len(t, scheduledSections(t, v, "brief.md"), 2, "a second --once ran the schedule again\n%s", out)
}
