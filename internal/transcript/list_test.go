package transcript

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestList(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	at := func(h int) func() time.Time { return func() time.Time { return t0.Add(time.Duration(h) * time.Hour) } }
	record := func(id string, h int, big bool, finish bool) string {
		r, err := Create(dir, id, &Options{Now: at(h)})
		if err != nil {
			t.Fatal(err)
		}
		st := startedPayload()
		st.Strand = "notes/" + id[len(id)-1:] + ".md"
		mustRecord(t, r, st)
		if big {
			mustRecord(t, r, AssistantMessage{Blocks: []Block{{Type: BlockText, Fidelity: Native, Text: strings.Repeat("reply ", 50_000)}}})
		}
		if finish {
			mustRecord(t, r, Finished{Outcome: "ok", Duration: time.Duration(h) * time.Second})
			mustRecord(t, r, TieOff{Path: "x.tieoff.md"})
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		return r.path
	}
	record(runID(1), 1, false, true)
	record(runID(2), 2, true, true)
	record(runID(3), 3, false, false)
	torn := record(runID(4), 4, false, true)
	appendTo(t, torn, `{"seq":5,"run_id":"`)
	hand := func(i int, content string, h int) {
		p := filepath.Join(dir, runID(i)+Ext)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		mt := t0.Add(time.Duration(h) * time.Hour)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	hand(5, "garbage\n", -1)
	hand(6, "", -2)
	hand(7, `{"seq":1,"run_id":"`+runID(7)+`","type":"message.user","time":"2026-11-21T01:00:00Z","data":{}}`+"\n", -3)
	hand(8, `{"seq":1,"run_id":"`+runID(8)+`","type":"run.started","time":"2026-11-21T02:00:00Z","data":{"strand":"s.md","event":"Created"}}`+"\n"+
		`{"seq":2,"run_id":"`+runID(8)+`","type":"run.finished","time":"2026-11-21T02:00:01Z","data":{"outcome":7}}`+"\n", 0)
	hand(9, `{"seq":1,"run_id":"`+runID(9)+`","type":"run.started","time":"2026-11-21T02:00:00Z","data":{"event":"Bogus"}}`+"\n", 0)
	if err := os.WriteFile(filepath.Join(dir, "notes.jsonl"), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		if err := os.Symlink(torn, filepath.Join(dir, runID(10)+Ext)); err != nil {
			t.Fatal(err)
		}
	}

	got, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		id       string
		strand   string
		finished bool
		outcome  string
		dur      time.Duration
		torn     bool
		problem  string
	}
	want := []row{
		{runID(4), "notes/4.md", true, "ok", 4 * time.Second, true, ""},
		{runID(3), "notes/3.md", false, "", 0, false, ""},
		{runID(2), "notes/2.md", true, "ok", 2 * time.Second, false, ""},
		{runID(1), "notes/1.md", true, "ok", time.Second, false, ""},
		{runID(9), "", false, "", 0, false, "decode run.started"},
		{runID(5), "", false, "", 0, false, "first line: not a transcript event"},
		{runID(6), "", false, "", 0, false, "no whole line"},
		{runID(7), "", false, "", 0, false, "first line is message.user"},
		{runID(8), "s.md", false, "", 0, false, "decode run.finished"}, // its run.started time
	}
	if len(got) != len(want) {
		t.Fatalf("List = %d runs; want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.RunID != w.id || g.Strand != w.strand || g.Finished != w.finished || g.Outcome != w.outcome ||
			g.Duration != w.dur || g.Torn != w.torn || !strings.Contains(g.Problem, w.problem) || (w.problem == "") != (g.Problem == "") {
			t.Errorf("List()[%d] = %+v; want %+v", i, g, w)
		}
	}
	if g := got[0]; !g.Time.Equal(t0.Add(4*time.Hour)) || g.Agent != "claude" || g.Event.String() != "Modified" || g.Path != torn {
		t.Errorf("List()[0] = %+v", g)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestList_MissingDir(t *testing.T) {
	got, err := List(filepath.Join(t.TempDir(), "none"))
	if err != nil || got != nil {
		t.Errorf("List(missing) = %v, %v", got, err)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := List(file); err == nil {
		t.Errorf("List(a file) = nil error")
	}
}

func TestReadRun(t *testing.T) {
	dir := t.TempDir()
	writeRun(t, dir, testRunID, time.Hour)
	evs, warns, err := ReadRun(dir, testRunID)
	if err != nil || len(warns) != 0 || len(evs) != 1 {
		t.Errorf("ReadRun = %d events, %v, %v", len(evs), warns, err)
	}
	if _, _, err := ReadRun(dir, "../"+testRunID); !errors.Is(err, ErrBadRunID) {
		t.Errorf("ReadRun(../id) = %v; want ErrBadRunID", err)
	}
}

func TestTailLines(t *testing.T) {
	content := "aaaa\nbbbb\ncccc\n"
	r := strings.NewReader(content)
	for _, tc := range []struct {
		max  int64
		want []string
	}{
		{100, []string{"cccc", "bbbb", "aaaa"}},
		{15, []string{"cccc", "bbbb", "aaaa"}},
		{10, []string{"cccc", "bbbb"}}, // the window starts exactly at a line
		{9, []string{"cccc"}},
		{3, nil},
		{0, nil},
	} {
		lines, err := tailLines(r, int64(len(content)), tc.max)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range lines {
			got = append(got, string(l))
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("tailLines(max %d) = %q; want %q", tc.max, got, tc.want)
		}
	}
}

func TestList_LongFinishedLine(t *testing.T) {
	dir := t.TempDir()
	r := mustCreate(t, dir, testRunID, nil)
	mustRecord(t, r, startedPayload())
	mustRecord(t, r, Finished{Outcome: "failed", Stderr: strings.Repeat("e", 20<<10)}) // longer than the first window
	mustRecord(t, r, TieOff{Path: "a.tieoff.md"})
	runs, err := List(dir)
	if err != nil || len(runs) != 1 || !runs[0].Finished || runs[0].Outcome != "failed" {
		t.Errorf("List = %+v, %v; want one failed run", runs, err)
	}
}

// v7At returns a UUID v7 run id made at t, with n in its random part.
func v7At(t time.Time, n int) string {
	return fmt.Sprintf("%08x-%04x-7000-8000-%012x", uint64(t.UnixMilli())>>16, uint64(t.UnixMilli())&0xffff, n)
}

// TestListSince: the runs whose id was made before since are left out
// without their files being read; Summarize finds one run, with the
// reason and usage of its run.finished.
func TestListSince(t *testing.T) {
	dir := t.TempDir()
	day := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	for i, at := range []time.Time{day.Add(-time.Millisecond), day, day.Add(20 * time.Hour)} {
		id := v7At(at, i)
		r, err := Create(dir, id, &Options{Now: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		mustRecord(t, r, startedPayload())
		mustRecord(t, r, Finished{Outcome: "failed", Reason: fmt.Sprintf("reason %d", i), Usage: &Usage{InputTokens: int64(i)}})
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A run started yesterday whose id says today (ids never go back: a
	// clock that did, an id made after a later one): its start decides.
	late, err := Create(dir, v7At(day.Add(21*time.Hour), 8), &Options{Now: func() time.Time { return day.Add(-2 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	mustRecord(t, late, startedPayload())
	if err := late.Close(); err != nil {
		t.Fatal(err)
	}
	// A file of a run made yesterday that cannot be read: never opened.
	if err := os.WriteFile(filepath.Join(dir, v7At(day.Add(-time.Hour), 9)+Ext), nil, 0o000); err != nil {
		t.Fatal(err)
	}
	got, err := ListSince(dir, day)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range got {
		if s.Problem != "" {
			t.Errorf("%s: %s", s.RunID, s.Problem)
		}
		ids = append(ids, s.RunID)
	}
	if want := []string{v7At(day.Add(20*time.Hour), 2), v7At(day, 1)}; !slices.Equal(ids, want) {
		t.Fatalf("ListSince = %v; want %v", ids, want)
	}
	s, ok := Summarize(dir, v7At(day, 1))
	if !ok || s.Reason != "reason 1" || s.Usage == nil || s.Usage.InputTokens != 1 {
		t.Errorf("Summarize = %+v, %v; want its reason and usage", s, ok)
	}
	if _, ok := Summarize(dir, v7At(day, 7)); ok {
		t.Error("Summarize found a run that has no transcript")
	}
	if _, ok := Summarize(dir, "../x"); ok {
		t.Error("Summarize took a path for a run id")
	}
}
