package tieoff

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/strand"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 21, 19, 30, 5, 0, time.UTC)

// testHash and testSession are a strand version's hash and a session as
// knotd records them.
const (
	testHash    = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	testSession = "0190f3c1-2b3c-7d4e-8f90-a1b2c3d4e5f6"
)

// mkSection builds a section at t0 plus i minutes with run id "run-<i>".
func mkSection(i int, ev strand.EventType, path, body string) Section {
	return Section{
		Event:  ev,
		Strand: path,
		Time:   t0.Add(time.Duration(i) * time.Minute),
		RunID:  fmt.Sprintf("0190f3c2-7b1a-7c3d-9e2f-%012d", i),
		Body:   body,
	}
}

// testVault makes a directory for a test's vault and opens it as a root,
// closed when the test ends.
func testVault(t testing.TB) (root *os.Root, dir string) {
	t.Helper()
	dir = t.TempDir()
	return openRoot(t, dir), dir
}

// openRoot opens dir as a root, closed when the test ends.
func openRoot(t testing.TB, dir string) *os.Root {
	t.Helper()
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = root.Close() })
	return root
}

func mustAppend(t testing.TB, root *os.Root, name string, s Section) int64 {
	t.Helper()
	off, err := Append(root, name, s)
	if err != nil {
		t.Fatalf("Append(%s): %v", name, err)
	}
	return off
}

func mustFormat(t testing.TB, s Section) []byte {
	t.Helper()
	b, err := Format(s)
	if err != nil {
		t.Fatalf("Format: %v", err)
	}
	return b
}

// mustRead reads a tie-off and fails the test on any problem.
func mustRead(t testing.TB, root *os.Root, name string) []Section {
	t.Helper()
	secs, probs, err := Read(root, name)
	if err != nil {
		t.Fatalf("Read(%s): %v", name, err)
	}
	if len(probs) > 0 {
		t.Fatalf("Read(%s) problems: %v", name, probs)
	}
	return secs
}

func mustReadFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// sameSection compares what a section says, ignoring where it was read.
func sameSection(got, want Section) error {
	switch {
	case got.Event != want.Event:
		return fmt.Errorf("Event = %v; want %v", got.Event, want.Event)
	case got.Strand != want.Strand:
		return fmt.Errorf("Strand = %q; want %q", got.Strand, want.Strand)
	case !got.Time.Equal(want.Time):
		return fmt.Errorf("Time = %v; want %v", got.Time, want.Time)
	case got.Failed != want.Failed:
		return fmt.Errorf("Failed = %v; want %v", got.Failed, want.Failed)
	case got.Paused != want.Paused:
		return fmt.Errorf("Paused = %v; want %v", got.Paused, want.Paused)
	case got.Asked != want.Asked:
		return fmt.Errorf("Asked = %v; want %v", got.Asked, want.Asked)
	case got.Question != want.Question:
		return fmt.Errorf("Question = %q; want %q", got.Question, want.Question)
	case got.Call != want.Call:
		return fmt.Errorf("Call = %q; want %q", got.Call, want.Call)
	case got.Verdict != want.Verdict:
		return fmt.Errorf("Verdict = %q; want %q", got.Verdict, want.Verdict)
	case got.RunID != want.RunID:
		return fmt.Errorf("RunID = %q; want %q", got.RunID, want.RunID)
	case got.Hash != want.Hash:
		return fmt.Errorf("Hash = %q; want %q", got.Hash, want.Hash)
	case got.Session != want.Session:
		return fmt.Errorf("Session = %q; want %q", got.Session, want.Session)
	case !got.Due.Equal(want.Due):
		return fmt.Errorf("Due = %v; want %v", got.Due, want.Due)
	case got.Body != want.Body:
		return fmt.Errorf("Body = %q; want %q", got.Body, want.Body)
	}
	return nil
}

// written returns the section as Parse should read it back after Format.
func written(s Section) Section {
	s.Body = string(prepareBody([]byte(s.Body)))
	s.Time = s.Time.UTC().Truncate(time.Second)
	return s
}

// Seed test append_mode_creates_file.
func TestAppendModeCreatesFile(t *testing.T) {
	root, dir := testVault(t)
	path := filepath.Join(dir, "plan.tieoff.md")
	s := mkSection(0, strand.Created, "ideas/plan.md", "First thoughts.")
	if off := mustAppend(t, root, "plan.tieoff.md", s); off != 0 {
		t.Errorf("Append offset = %d; want 0", off)
	}
	got := mustReadFile(t, path)
	want := "## Event: Created\n## Strand: ideas/plan.md\n## Timestamp: 2026-11-21T19:30:05Z\n" +
		"<!-- knot:run 0190f3c2-7b1a-7c3d-9e2f-000000000000 bytes=16 -->\n---\n\nFirst thoughts.\n"
	if string(got) != want {
		t.Errorf("new tie-off = %q; want %q", got, want)
	}
	// The new file gets the permissions an editor would give a note.
	editor := filepath.Join(dir, "editor.md")
	require.NoError(t, os.WriteFile(editor, nil, 0o644))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	ei, err := os.Stat(editor)
	require.NoError(t, err)
	if fi.Mode() != ei.Mode() {
		t.Errorf("tie-off mode = %v; want %v like a note an editor creates", fi.Mode(), ei.Mode())
	}
}

// Seed test append_mode_adds_section.
func TestAppendModeAddsSection(t *testing.T) {
	root, dir := testVault(t)
	const name = "plan.tieoff.md"
	path := filepath.Join(dir, name)
	a := mkSection(0, strand.Created, "plan.md", "one")
	b := mkSection(1, strand.Modified, "plan.md", "two")
	mustAppend(t, root, name, a)
	before := mustReadFile(t, path)
	off := mustAppend(t, root, name, b)
	got := mustReadFile(t, path)
	want := string(before) + "\n---\n\n" + string(mustFormat(t, b))
	if string(got) != want {
		t.Errorf("after second Append = %q; want %q", got, want)
	}
	if want := int64(len(before) + len(separator)); off != want {
		t.Errorf("Append offset = %d; want %d", off, want)
	}
	secs := mustRead(t, root, name)
	if len(secs) != 2 {
		t.Fatalf("Read = %d sections; want 2", len(secs))
	}
	if err := sameSection(secs[1], written(b)); err != nil {
		t.Error(err)
	}
	if secs[1].Offset != off {
		t.Errorf("section Offset = %d; Append said %d", secs[1].Offset, off)
	}
}

// Seed test append_mode_preserves_history: three appends, three readable
// sections, and every append leaves the bytes before it alone.
func TestAppendModePreservesHistory(t *testing.T) {
	root, dir := testVault(t)
	const name = "journal.tieoff.md"
	path := filepath.Join(dir, name)
	in := []Section{
		mkSection(0, strand.Created, "journal.md", "Day one.\n\n- went out\n- came back"),
		mkSection(1, strand.Modified, "journal.md", "Day two.\n---\nA rule above."),
		mkSection(2, strand.Deleted, "journal.md", "The note is gone."),
	}
	var prev []byte
	for i, s := range in {
		mustAppend(t, root, name, s)
		now := mustReadFile(t, path)
		if !bytes.HasPrefix(now, prev) {
			t.Fatalf("append %d changed earlier bytes", i)
		}
		prev = now
	}
	secs := mustRead(t, root, name)
	if len(secs) != len(in) {
		t.Fatalf("Read = %d sections; want %d", len(secs), len(in))
	}
	for i := range in {
		if err := sameSection(secs[i], written(in[i])); err != nil {
			t.Errorf("section %d: %v", i, err)
		}
	}
}

// Seed test tie_off_sections_readable: every field comes back.
func TestTieOffSectionsReadable(t *testing.T) {
	root, _ := testVault(t)
	const name = "x.tieoff.md"
	fail := mkSection(1, strand.Modified, "dir with space/-dash 🎉.md", Failure{
		What: "agent claude exited with status 2", ExitStatus: 2, Duration: 1500 * time.Millisecond,
		Stderr: "error: no API key\n",
	}.Body())
	fail.Failed = true
	in := []Section{
		mkSection(0, strand.Created, "dir with space/-dash 🎉.md", "Looks good.\n"),
		fail,
		{Event: strand.Deleted, Strand: "dir with space/-dash 🎉.md", Time: t0.Add(time.Hour + 999*time.Millisecond), RunID: "r3", Body: "Gone."},
	}
	for _, s := range in {
		mustAppend(t, root, name, s)
	}
	secs := mustRead(t, root, name)
	if len(secs) != 3 {
		t.Fatalf("Read = %d sections; want 3", len(secs))
	}
	for i := range in {
		if err := sameSection(secs[i], written(in[i])); err != nil {
			t.Errorf("section %d: %v", i, err)
		}
	}
	if secs[0].Body != "Looks good.\n" {
		t.Errorf("Body = %q; want the reply byte for byte", secs[0].Body)
	}
	if !strings.Contains(secs[1].Body, "exited with status 2") || !secs[1].Failed {
		t.Errorf("failed section = %+v", secs[1])
	}
	if lines := []int{secs[0].Line, secs[1].Line, secs[2].Line}; lines[0] != 1 || lines[1] <= lines[0] || lines[2] <= lines[1] {
		t.Errorf("Lines = %v", lines)
	}
}
