//go:build unix

package vault

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/knotd/knotd/internal/tieoff"
)

// .knot/ and every folder travel with the vault, so they are someone
// else's input (the shared-ground issue's attacks, each of which hurt an
// earlier knotd). knotd never reads or writes through a symbolic link out
// of the vault, never blocks on a FIFO, and bounds what it writes.

// outsideFile makes a file outside the vault and returns its path.
func outsideFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "victim")
	mustDo(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// TestAttack_KnotLockLinkedOut: an earlier knotd truncated and overwrote
// the file a .knot/lock symbolic link pointed to. The link is removed,
// never followed.
func TestAttack_KnotLockLinkedOut(t *testing.T) {
	e := newEnv(t)
	victim := outsideFile(t, "precious")
	mustDo(t, os.MkdirAll(e.abs(".knot"), 0o755))
	mustDo(t, os.Symlink(victim, e.abs(".knot/lock")))
	e.write("a.md", "# A\n")
	e.onceFresh()
	e.write("a.md", "# A, edited\n")
	e.onceFresh()
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("the file .knot/lock pointed to holds %q", b)
	}
}

// TestAttack_KnotRunsLinkedOut: an earlier knotd wrote transcripts (the
// notes' text) through a .knot/runs link out of the vault. Transcripts
// live in the state directory; the link leads nowhere knotd writes.
func TestAttack_KnotRunsLinkedOut(t *testing.T) {
	e := newEnv(t)
	outside := t.TempDir()
	mustDo(t, os.MkdirAll(e.abs(".knot"), 0o755))
	mustDo(t, os.Symlink(outside, e.abs(".knot/runs")))
	e.onceFresh()
	e.write("a.md", "# A, the note's private text\n")
	if sum := e.onceFresh(); sum.Ran != 1 {
		t.Fatalf("runs = %v", ran(sum))
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("knotd wrote %d files through .knot/runs out of the vault", len(entries))
	}
}

// TestAttack_KnotLinkedOut: with .knot itself a link out of the vault,
// knotd writes nothing there (no heartbeat, no state) and reads no config
// from there.
func TestAttack_KnotLinkedOut(t *testing.T) {
	e := newEnv(t)
	outside := t.TempDir()
	mustDo(t, os.WriteFile(filepath.Join(outside, "config.yaml"), []byte("limits: {content: 1KiB}\n"), 0o600))
	mustDo(t, os.Symlink(outside, e.abs(".knot")))
	v, err := Open(e.root, e.options())
	if err == nil {
		_, err = v.Once(context.Background(), OnceOptions{})
		mustDo(t, v.Close())
	}
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "is a symbolic link") {
		t.Fatalf("knotd with .knot a link out of the vault = %v; want a clear refusal", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("knotd wrote into the folder .knot points to: %d entries", len(entries))
	}
}

// TestAttack_ConfigIsNotAFile: a .knot/config.yaml that is a link to
// /dev/zero grew an earlier knotd to 24 GB; a FIFO blocked it forever.
// Both are refused at once, with a message that says what to do.
func TestAttack_ConfigIsNotAFile(t *testing.T) {
	tests := []struct {
		name string
		make func(t *testing.T, path string)
		say  string
	}{
		{"link to /dev/zero", func(t *testing.T, p string) { mustDo(t, os.Symlink("/dev/zero", p)) }, "not a regular file"},
		{"link to a file outside", func(t *testing.T, p string) { mustDo(t, os.Symlink(outsideFile(t, "debounce: 1s\n"), p)) }, "not a regular file"},
		{"FIFO", func(t *testing.T, p string) { mustDo(t, syscall.Mkfifo(p, 0o644)) }, "FIFO"},
		{"too large", func(t *testing.T, p string) {
			mustDo(t, os.WriteFile(p, nil, 0o644))
			mustDo(t, os.Truncate(p, config.MaxConfigSize+1))
		}, "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			mustDo(t, os.MkdirAll(e.abs(".knot"), 0o755))
			tt.make(t, e.abs(".knot/config.yaml"))
			done := make(chan error, 1)
			go func() {
				v, err := Open(e.root, e.options())
				if err == nil {
					err = v.Close()
					if err == nil {
						err = errors.New("opened")
					}
				}
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.say) || !strings.Contains(err.Error(), "config.yaml") {
					t.Errorf("Open = %v; want a configuration error saying %q", err, tt.say)
				}
			case <-time.After(waitTimeout):
				t.Fatal("Open did not return: it blocked on the vault config")
			}
		})
	}
}

// TestAttack_FolderSwappedForALinkDuringARun: an earlier knotd, whose
// note's folder was swapped for a link out of the vault while the agent
// ran, appended the section and wrote knot_resume outside the vault.
// Nothing is written outside; the reply is kept in knotd's state
// directory, the run reported failed with where it is, and the run is
// done (a later pass does not fail on it again).
func TestAttack_FolderSwappedForALinkDuringARun(t *testing.T) {
	e := newEnv(t)
	e.useAgent("claude", claudeGateBehaviour)
	e.onceFresh()
	e.write("notes/n.md", "---\nknot_session: 0b3f1e2c-5d6a-4e7b-8c9d-0a1b2c3d4e5f\n---\n# N\n")
	outside := t.TempDir()
	decoy := "---\nknot_session: 0b3f1e2c-5d6a-4e7b-8c9d-0a1b2c3d4e5f\n---\n# N\n"
	mustDo(t, os.WriteFile(filepath.Join(outside, "n.md"), []byte(decoy), 0o644))
	mustDo(t, os.WriteFile(filepath.Join(outside, "n.tieoff.md"), []byte("outside\n"), 0o644))

	v := e.open()
	done := make(chan Summary, 1)
	go func() {
		sum, _ := v.Once(context.Background(), OnceOptions{})
		done <- sum
	}()
	testutil.WaitFor(t, waitTimeout, "the agent to start", func() bool { return fileExists(gateStarted(e.state, 1)) })
	mustDo(t, os.Rename(e.abs("notes"), e.abs("notes.moved")))
	mustDo(t, os.Symlink(outside, e.abs("notes")))
	e.release(1)
	sum := <-done
	e.close(v)
	kept := e.rescued()
	if len(kept) != 1 {
		t.Errorf("rescued = %v; want the reply kept", kept)
	}
	for name := range kept {
		if sum.Failed != 1 || !strings.Contains(sum.Runs[0].Reason, name) {
			t.Errorf("summary = %+v; want the run failed, saying where its reply is", sum)
		}
	}
	if sum, _, err := e.onceLoggedErr(); err != nil || sum.Failed != 0 {
		t.Errorf("a later pass: %v, %+v; want it to succeed", err, sum)
	}
	for name, want := range map[string]string{"n.md": decoy, "n.tieoff.md": "outside\n"} {
		if b, _ := os.ReadFile(filepath.Join(outside, name)); string(b) != want {
			t.Errorf("%s outside the vault was written: %q", name, b)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 2 {
		t.Errorf("knotd created files outside the vault: %d entries", len(entries))
	}
}

// TestAttack_HardLinkedTieOff: a tie-off with another hard link (to a file
// anywhere on the same disk, or a cp -al snapshot) is never written
// through: the other file is unchanged, and the tie-off gets a copy of its
// own with the section; the note is not held up.
func TestAttack_HardLinkedTieOff(t *testing.T) {
	e := newEnv(t)
	e.onceFresh()
	victim := filepath.Join(e.root, ".hidden-victim")
	mustDo(t, os.WriteFile(victim, []byte("precious\n"), 0o600))
	mustDo(t, os.Link(victim, e.abs("a.tieoff.md")))
	e.write("a.md", "# A\n")
	if sum := e.onceFresh(); sum.Ran != 1 || sum.Failed != 0 {
		t.Errorf("summary %+v; want the run answered", sum)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("the hard-linked file was written through: %q", b)
	}
	e.write("a.md", "# A, edited\n")
	if sum := e.onceFresh(); sum.Ran != 1 || sum.Failed != 0 {
		t.Errorf("the next run: %+v", sum)
	}
	secs, _, err := tieoff.Read(e.vaultRoot(), "a.tieoff.md")
	if err != nil || !strings.HasPrefix(e.read("a.tieoff.md"), "precious\n") || len(secs) != 2 {
		t.Errorf("the tie-off = %q, %v; want its old content and both sections", e.read("a.tieoff.md"), err)
	}
}

// swappingRunner runs its inner runner, then swaps the note's folder for a
// link out of the vault before the run is recorded.
type swappingRunner struct {
	inner    AgentRunner
	from, to string
	swapped  bool
	outside  string
	t        *testing.T
}

func (s *swappingRunner) Run(ctx context.Context, req agentrun.Request) (agentrun.Result, error) {
	res, err := s.inner.Run(ctx, req)
	if !s.swapped {
		s.swapped = true
		mustDo(s.t, os.Rename(s.from, s.to))
		mustDo(s.t, os.Symlink(s.outside, s.from))
	}
	return res, err
}

// TestAttack_FolderSwappedWhileAsking: a run that ended holding a call,
// whose note's folder was swapped for a link out of the vault before it
// was recorded: its reply is kept aside and its question cannot be
// written; the run is done all the same (said in the log), not journaled
// for ever, and a later pass does not fail on it again. Nothing is
// written outside.
func TestAttack_FolderSwappedWhileAsking(t *testing.T) {
	e := newEnv(t)
	e.useAgent("", fakeagent.Echo)
	e.onceFresh()
	e.write("notes/n.md", "Please write it.\nASK WRITE out.txt hello\n")
	outside := t.TempDir()
	opts := e.options()
	opts.Agent = &swappingRunner{inner: &askingRunner{inner: &agentrun.Runner{}, root: e.root},
		from: e.abs("notes"), to: e.abs("notes.moved"), outside: outside, t: t}
	v, err := Open(e.root, opts)
	mustDo(t, err)
	_, err = v.Once(context.Background(), OnceOptions{})
	mustDo(t, err)
	pending, err := v.store.Pendings()
	mustDo(t, err)
	if len(pending) != 0 {
		t.Errorf("the run is still journaled: %d entries; want it done", len(pending))
	}
	mustDo(t, v.Close())
	if kept := e.rescued(); len(kept) != 1 {
		t.Errorf("rescued = %v; want the reply kept", kept)
	}
	if sum, _, err := e.onceLoggedErr(); err != nil || sum.Failed != 0 {
		t.Errorf("a later pass: %v, %+v; want it to succeed", err, sum)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written outside the vault: %v", entries)
	}
}
