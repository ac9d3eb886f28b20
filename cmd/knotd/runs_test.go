package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/transcript"
	"github.com/knotd/knotd/internal/vault"
	"github.com/stretchr/testify/require"
)

var runMarker = regexp.MustCompile(`<!-- knot:run ([0-9a-f-]{36}) `)

// runsVault runs knotd --once over a vault with two new strands and
// returns the vault and the run ids of a.md and b.md, read from their
// tie-offs' run markers.
func runsVault(t *testing.T) (v string, runA, runB string) {
	t.Helper()
	v, _ = setup(t)
	if code, _, errOut := knotd(t, "--once", v); code != exitOK {
		t.Fatalf("first pass: exit %d: %s", code, errOut)
	}
	writeFile(t, filepath.Join(v, "a.md"), "# A\n\nalpha\n")
	if code, _, errOut := knotd(t, "--once", v); code != exitOK {
		t.Fatalf("pass over a.md: exit %d: %s", code, errOut)
	}
	writeFile(t, filepath.Join(v, "sub", "b.md"), "# B\n\nbeta\n")
	if code, _, errOut := knotd(t, "--once", v); code != exitOK {
		t.Fatalf("pass over b.md: exit %d: %s", code, errOut)
	}
	marker := func(tieOff string) string {
		b, err := os.ReadFile(filepath.Join(v, tieOff))
		if err != nil {
			t.Fatal(err)
		}
		m := runMarker.FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s has no run marker:\n%s", tieOff, b)
		}
		return string(m[1])
	}
	return v, marker("a.tieoff.md"), marker(filepath.Join("sub", "b.tieoff.md"))
}

// TestRuns_ListsAndShowsRuns: knotd runs lists the runs newest first, and
// the run id in a tie-off's marker leads to the run with runs show.
func TestRuns_ListsAndShowsRuns(t *testing.T) {
	v, runA, runB := runsVault(t)

	code, out, errOut := knotd(t, "runs", v)
	if code != exitOK || errOut != "" {
		t.Fatalf("knotd runs: exit %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], transcript.ShortID(runB)) || !strings.Contains(lines[2], transcript.ShortID(runA)) {
		t.Fatalf("knotd runs =\n%s\nwant a heading, then run %s (b) and run %s (a)", out, runB, runA)
	}
	for _, want := range []string{"ok", "Created", "digest", "sub/b.md"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("knotd runs line %q does not say %q", lines[1], want)
		}
	}

	code, out, _ = knotd(t, "runs", "--json", v)
	var list []runJSON
	if code != exitOK || json.Unmarshal([]byte(out), &list) != nil || len(list) != 2 {
		t.Fatalf("knotd runs --json: exit %d:\n%s", code, out)
	}
	if list[0].RunID != runB || list[1].RunID != runA || list[1].Strand != "a.md" || list[1].Outcome != "ok" || !list[1].Finished {
		t.Errorf("knotd runs --json = %+v; want b's run, then a's", list)
	}

	// --strand is --note's older name, still taken.
	for _, args := range [][]string{{"--note", "sub/b.md"}, {"--note", filepath.Join(v, "sub", "b.md")}, {"--strand", "sub/b.md"}} {
		code, out, _ = knotd(t, "runs", args[0], args[1], v)
		if code != exitOK || !strings.Contains(out, transcript.ShortID(runB)) || strings.Contains(out, transcript.ShortID(runA)) {
			t.Errorf("knotd runs %s %s: exit %d:\n%s\nwant run %s only", args[0], args[1], code, out, runB)
		}
	}

	// From a folder of the vault, --note reads PATH from there, as
	// every command reads a note's path (and from the vault's root when
	// only that leads to a note).
	t.Run("from a folder of the vault", func(t *testing.T) {
		t.Chdir(filepath.Join(v, "sub"))
		for _, strand := range []string{"b.md", "sub/b.md", "../sub/b.md"} {
			code, out, errOut := knotd(t, "runs", "--note", strand)
			if code != exitOK || !strings.Contains(out, transcript.ShortID(runB)) || strings.Contains(out, transcript.ShortID(runA)) {
				t.Errorf("in sub/: knotd runs --note %s: exit %d, stderr %q:\n%s\nwant run %s only", strand, code, errOut, out, runB)
			}
		}
		code, out, errOut := knotd(t, "runs", "--strand", "../a.md", "--cost")
		if code != exitOK || !strings.Contains(out, "a.md") || strings.Contains(out, "sub/b.md") {
			t.Errorf("in sub/: knotd runs --cost --strand ../a.md: exit %d, stderr %q:\n%s\nwant a.md's run only", code, errOut, out)
		}
	})

	code, out, errOut = knotd(t, "runs", "show", runA, v)
	if code != exitOK || errOut != "" {
		t.Fatalf("knotd runs show: exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"[1] run.started", "note      a.md (Created)", "[2] message.user", "| alpha", "[3] message.assistant", "[4] run.finished", "[5] tieoff.appended", "a.tieoff.md at byte 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("knotd runs show does not print %q:\n%s", want, out)
		}
	}

	// --json prints the transcript's lines as they are in the file,
	// whether it comes before or after RUN_ID.
	dir, ok, err := vault.RunsDir("", v)
	if err != nil || !ok {
		t.Fatalf("RunsDir = %v, %v", ok, err)
	}
	file, err := os.ReadFile(filepath.Join(dir, runA+transcript.Ext))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"runs", "show", runA, "--json", v}, {"runs", "show", "--json", runA, v}} {
		if code, out, _ := knotd(t, args...); code != exitOK || out != string(file) {
			t.Errorf("knotd %q: exit %d:\n%s\nwant the file:\n%s", args, code, out, file)
		}
	}
}

// TestRuns_Errors: a missing RUN_ID or a malformed one is a usage error;
// an unknown run says so.
func TestRuns_Errors(t *testing.T) {
	v, _, _ := runsVault(t)
	tests := []struct {
		args []string
		want int
		say  string
	}{
		{[]string{"runs", "show", v}, exitUsage, "not a run id"},
		{[]string{"runs", "show"}, exitUsage, "needs a RUN_ID"},
		{[]string{"runs", "show", "../../etc/passwd", v}, exitUsage, "not a run id"},
		{[]string{"runs", "show", "01a1ffd2-2797-7eef-b460-c7d42f598d8c", v}, exitFailed, "no run 01a1ffd2-2797-7eef-b460-c7d42f598d8c"},
		{[]string{"runs", "--keep", "0", v}, exitUsage, "at least 1"},
		{[]string{"runs", "--keep", "3", "--json", v}, exitUsage, "no --json"},
		{[]string{"runs", "show", "01a1ffd2-2797-7eef-b460-c7d42f598d8c", "--strand", "a.md", v}, exitUsage, "takes only"},
		{[]string{"runs", v, v}, exitUsage, "one VAULT at most"},
		{[]string{"runs", "--note", "/elsewhere/a.md", v}, exitUsage, "not inside the vault"},
		{[]string{"runs", "--nope", v}, exitUsage, "unknown flag --nope"},
	}
	for _, tt := range tests {
		code, _, errOut := knotd(t, tt.args...)
		if code != tt.want || !strings.Contains(errOut, tt.say) {
			t.Errorf("knotd %q: exit %d, stderr %q; want exit %d saying %q", tt.args, code, errOut, tt.want, tt.say)
		}
	}
}

// TestRuns_Keep: --keep DAYS and --keep-count N delete old transcripts and
// nothing else.
func TestRuns_Keep(t *testing.T) {
	v, runA, runB := runsVault(t)
	dir, ok, err := vault.RunsDir("", v)
	if err != nil || !ok {
		t.Fatalf("RunsDir = %v, %v", ok, err)
	}
	age := func(run string, d time.Duration) {
		t.Helper()
		old := time.Now().Add(-d)
		if err := os.Chtimes(filepath.Join(dir, run+transcript.Ext), old, old); err != nil {
			t.Fatal(err)
		}
	}
	listed := func() []string {
		t.Helper()
		code, out, _ := knotd(t, "runs", "--json", v)
		var list []runJSON
		if code != exitOK || json.Unmarshal([]byte(out), &list) != nil {
			t.Fatalf("knotd runs --json: exit %d:\n%s", code, out)
		}
		var ids []string
		for _, r := range list {
			ids = append(ids, r.RunID)
		}
		return ids
	}
	age(runA, 72*time.Hour)
	age(runB, 2*time.Hour)

	if code, out, errOut := knotd(t, "runs", "--keep", "4", "--keep-count", "2", v); code != exitOK || !strings.Contains(out, "deleted 0 run transcripts") {
		t.Errorf("knotd runs --keep 4 --keep-count 2: exit %d, %q %q; want nothing deleted", code, out, errOut)
	}
	if got := listed(); !slices.Equal(got, []string{runB, runA}) {
		t.Errorf("runs after --keep 4 = %v; want both", got)
	}
	if code, out, errOut := knotd(t, "runs", "--keep-count", "1", v); code != exitOK || !strings.Contains(out, "deleted 1 run transcripts") {
		t.Errorf("knotd runs --keep-count 1: exit %d, %q %q; want a's run deleted", code, out, errOut)
	}
	if got := listed(); !slices.Equal(got, []string{runB}) {
		t.Errorf("runs after --keep-count 1 = %v; want [%s]", got, runB)
	}
	if code, out, _ := knotd(t, "runs", "--keep", "1", v); code != exitOK || !strings.Contains(out, "deleted 0 run transcripts") {
		t.Errorf("knotd runs --keep 1 deleted a run of two hours ago: exit %d, %q", code, out)
	}
	age(runB, 48*time.Hour)
	if code, out, _ := knotd(t, "runs", "--keep", "1", v); code != exitOK || !strings.Contains(out, "deleted 1 run transcripts") {
		t.Errorf("knotd runs --keep 1: exit %d, %q; want b's run of two days ago deleted", code, out)
	}
	if code, out, _ := knotd(t, "runs", v); code != exitOK || strings.TrimSpace(out) != "no runs" {
		t.Errorf("knotd runs after pruning all: exit %d, %q; want no runs", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(v, "a.tieoff.md")); err != nil || !strings.Contains(string(b), runA) {
		t.Errorf("pruning touched a's tie-off: %v", err)
	}
}

// TestRuns_Help: knotd runs --help explains the commands and where RUN_ID
// comes from; knotd --help names them.
func TestRuns_Help(t *testing.T) {
	code, out, _ := knotd(t, "runs", "--help")
	for _, want := range []string{"knotd runs show RUN_ID", "<!-- knot:run RUN_ID", "--keep DAYS", "--keep-count N", "--note PATH", "--json", "--limit N", "  -f\n", "--follow", "--cost", "--since WHEN", "never makes up a price"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("knotd runs --help (exit %d) does not say %q:\n%s", code, want, out)
		}
	}
	_, out, _ = knotd(t, "--help")
	for _, want := range []string{"knotd runs [--note PATH] [--since WHEN] [--limit N] [-f] [--json] [VAULT]", "knotd runs --cost", "knotd runs show RUN_ID", "knotd runs --keep DAYS"} {
		if !strings.Contains(out, want) {
			t.Errorf("knotd --help does not name %q", want)
		}
	}
}

// TestRuns_PrefixLimitAndUTC: runs show takes a unique prefix of a run
// id and names the candidates of an ambiguous one; --limit N lists the
// newest N; times are printed in UTC whatever TZ says.
func TestRuns_PrefixLimitAndUTC(t *testing.T) {
	v, runA, runB := runsVault(t)
	n := 0
	for n < len(runA) && runA[n] == runB[n] {
		n++
	}
	code, out, errOut := knotd(t, "runs", "show", runA[:n+1], v)
	if code != exitOK || !strings.Contains(out, "note      a.md (Created)") {
		t.Errorf("knotd runs show %s (a unique prefix): exit %d, %q %q", runA[:n+1], code, out, errOut)
	}
	if n > 0 {
		code, _, errOut = knotd(t, "runs", "show", runA[:n], v)
		lo, hi := min(runA, runB), max(runA, runB)
		want := fmt.Sprintf("knotd runs show: %s names 2 runs: %s, %s; give more of the id (see knotd runs --help)\n", runA[:n], lo, hi)
		if code != exitUsage || errOut != want {
			t.Errorf("knotd runs show %s (ambiguous): exit %d, stderr\n%q; want\n%q", runA[:n], code, errOut, want)
		}
	}
	if code, _, errOut := knotd(t, "runs", "show", "fff", v); code != exitFailed || !strings.Contains(errOut, "no run id ends or begins with fff") {
		t.Errorf("knotd runs show fff: exit %d, %q", code, errOut)
	}
	if code, _, errOut := knotd(t, "runs", "show", "FFF", v); code != exitUsage || !strings.Contains(errOut, "not a run id") {
		t.Errorf("knotd runs show FFF: exit %d, %q", code, errOut)
	}

	t.Setenv("TZ", "Asia/Kolkata") // +05:30: a local time would show
	code, out, _ = knotd(t, "runs", "--limit", "1", v)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 2 || !strings.Contains(lines[1], transcript.ShortID(runB)) {
		t.Fatalf("knotd runs --limit 1: exit %d:\n%s\nwant the heading and b's run", code, out)
	}
	dir, _, err := vault.RunsDir("", v)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, runB+transcript.Ext))
	if err != nil {
		t.Fatal(err)
	}
	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ `).FindString(lines[1])
	when, err := time.Parse("2006-01-02 15:04:05Z ", stamp)
	if err != nil || when.Sub(fi.ModTime().UTC()).Abs() > time.Minute {
		t.Errorf("knotd runs prints %q; want the run's time in UTC (the file's is %v)", lines[1], fi.ModTime().UTC())
	}
	code, out, _ = knotd(t, "runs", "--limit", "1", "--json", v)
	var list []runJSON
	if code != exitOK || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 || list[0].RunID != runB || !regexp.MustCompile(`"time": "[^"]+Z"`).MatchString(out) {
		t.Errorf("knotd runs --limit 1 --json: exit %d:\n%s\nwant b's run, its time in UTC", code, out)
	}
	if code, _, errOut := knotd(t, "runs", "--limit", "0", v); code != exitUsage || !strings.Contains(errOut, "--limit must be at least 1") {
		t.Errorf("knotd runs --limit 0: exit %d, %q", code, errOut)
	}
}

// TestRuns_ShortID: run ids are UUID v7, whose first digits are the time:
// two runs made within minutes share them, so a prefix of a few digits
// names no run. knotd runs shows each run by the end of its id (its
// random part), and runs show takes it.
func TestRuns_ShortID(t *testing.T) {
	v, runA, runB := runsVault(t)
	if runA[:8] != runB[:8] {
		t.Logf("the two runs' ids do not share their first 8 digits (%s, %s)", runA, runB)
	}
	code, out, errOut := knotd(t, "runs", v)
	require.Equal(t, exitOK, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	require.Regexp(t, `^TIME +RUN +OUTCOME`, lines[0])
	for i, run := range []string{runB, runA} {
		short := strings.Fields(lines[i+1])[2] // the time is two fields
		require.Equal(t, run[len(run)-8:], short, "the run column of %q", lines[i+1])
		code, out, errOut := knotd(t, "runs", "show", short, v)
		require.Equal(t, exitOK, code, "knotd runs show %s: %s", short, errOut)
		require.Contains(t, out, run)
	}
	code, out, errOut = knotd(t, "runs", "--json", v)
	require.Equal(t, exitOK, code, errOut)
	var list []runJSON
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.Equal(t, transcript.ShortID(runB), list[0].ShortID)
}
