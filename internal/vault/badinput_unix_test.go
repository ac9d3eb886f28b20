//go:build unix

package vault

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/scheduler"
	"github.com/knotd/knotd/internal/testutil"
)

// TestOnce_NotesThatMustWork: CRLF line ends, a byte order mark and odd
// file names are ordinary strands; a leading dash in a name never reaches
// an agent as a flag, even one that takes its prompt as an argument.
func TestOnce_NotesThatMustWork(t *testing.T) {
	e := newEnv(t)
	e.userConfig("default_agent: fake\nagents:\n" + e.fakeAgentYAML("fake", "", fakeagent.Echo) +
		e.fakeAgentYAML("argv", "", fakeagent.Echo) + "    prompt: arg\n")
	e.onceFresh()
	notes := map[string]string{
		"crlf.md":          "---\r\nknot_mode: append\r\n---\r\n# CRLF\r\nline\r\n",
		"bom.md":           "\ufeff---\nknot_mode: append\n---\n# BOM\n",
		"bom-plain.md":     "\ufeff# BOM without frontmatter\n",
		"with space.md":    "# Space\n",
		"émoji 🧶.md":       "# Emoji\n",
		"new\nline.md":     "# Newline\n",
		"-rf.md":           "# Dash\n",
		"--help.md":        "# Dashes\n",
		"dir -x/--q.md":    "# Dash dir\n",
		"-arg.md":          "---\nknot_agent: argv\n---\n# Arg mode\n",
		"--version.md":     "---\nknot_agent: argv\n---\n--version\n",
		"sub/--model x.md": "---\nknot_agent: argv\n---\n-p\n",
	}
	for rel, content := range notes {
		e.write(rel, content)
	}
	sum, log := e.onceLogged()
	if sum.Ran != len(notes) {
		t.Errorf("ran %d strands; want %d", sum.Ran, len(notes))
	}
	for _, r := range sum.Runs {
		t.Logf("%q: %s %s", r.Strand, r.Outcome, r.Reason)
		if string(r.Outcome) != "ok" && !strings.Contains(r.Reason, "-") {
			t.Errorf("%q: %s (%s); want ok, or a refusal about the dash", r.Strand, r.Outcome, r.Reason)
		}
	}
	for rel, content := range notes {
		if secs := e.sections(rel); len(secs) != 1 {
			t.Errorf("%q: %d sections; want 1", rel, len(secs))
		}
		// knotd adds its session to the frontmatter and nothing else.
		got := e.read(rel)
		body := strings.TrimPrefix(content[strings.LastIndex(strings.TrimRight(content, "\r\n"), "\n")+1:], "\ufeff")
		if !strings.HasSuffix(got, body) || strings.HasPrefix(content, "\ufeff") != strings.HasPrefix(got, "\ufeff") {
			t.Errorf("%q: knotd mangled the note: %q", rel, got)
		}
	}
	for rel := range notes {
		if !strings.HasPrefix(rel, "crlf") && !strings.HasPrefix(rel, "bom") {
			continue
		}
		if secs := e.sections(rel); len(secs) == 1 && secs[0].Failed {
			t.Errorf("%s failed: %s", rel, secs[0].Body)
		}
	}
	for _, c := range e.calls() {
		for _, a := range c.Args {
			if strings.HasPrefix(a, "-") {
				t.Errorf("an agent got the argument %q (call %v)", a, c.Args)
			}
		}
	}
	if strings.Contains(log, "level=ERROR") {
		t.Errorf("log has errors:\n%s", log)
	}
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Errorf("a second pass ran: %+v", sum.Runs)
	}
}

// TestOnce_SpecialFilesNeverBlock: a socket, a device, a symlink loop and
// a symbolic link to a directory outside the vault are not strands and are
// not followed; a huge note fails once with a clear message; the rest of
// the vault is served.
func TestOnce_SpecialFilesNeverBlock(t *testing.T) {
	e := newEnv(t)
	e.useAgent("", fakeagent.Echo)
	outside := t.TempDir()
	mustDo(t, os.WriteFile(filepath.Join(outside, "secret.md"), []byte("# Outside\n"), 0o644))
	e.onceFresh()

	l, err := net.Listen("unix", e.abs("sock.md"))
	mustDo(t, err)
	t.Cleanup(func() { _ = l.Close() })
	if err := syscall.Mknod(e.abs("dev.md"), syscall.S_IFCHR|0o644, 0x0103); err != nil { // like /dev/null
		t.Logf("mknod: %v; the device case is not tested", err)
	}
	mustDo(t, os.Symlink("loop-b.md", e.abs("loop-a.md")))
	mustDo(t, os.Symlink("loop-a.md", e.abs("loop-b.md")))
	mustDo(t, os.Symlink(outside, e.abs("linked")))
	mustDo(t, os.Symlink("..", e.abs("up.md")))
	big := bytes.Repeat([]byte("fifty mebibytes of note\n"), (50<<20)/24)
	mustDo(t, os.WriteFile(e.abs("huge.md"), big, 0o644))
	e.write("good.md", "# Good\n")

	sum, log := e.onceLogged()
	var got []string
	for _, r := range sum.Runs {
		got = append(got, r.Strand+" "+string(r.Outcome))
	}
	if want := []string{"good.md ok", "huge.md failed"}; !slices.Equal(got, want) {
		t.Errorf("runs %v; want %v", got, want)
	}
	if secs := e.sections("huge.md"); len(secs) != 1 || !secs[0].Failed || !strings.Contains(secs[0].Body, "limit") {
		t.Errorf("huge.md: %+v; want one failure section about the limit", secs)
	}
	if !strings.Contains(log, "huge.md") {
		t.Errorf("the log does not mention huge.md:\n%s", log)
	}
	for _, rel := range []string{"sock", "dev", "loop-a", "loop-b", "up", "linked/secret"} {
		if e.exists(rel + ".tieoff.md") {
			t.Errorf("%s.md got a tie-off", rel)
		}
	}
	if _, err := os.Lstat(filepath.Join(outside, "secret.tieoff.md")); err == nil {
		t.Error("knotd wrote a tie-off outside the vault through a symbolic link")
	}
	if len(e.calls()) != 1 {
		t.Errorf("agent calls %d; want 1 (good.md)", len(e.calls()))
	}
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Errorf("a second pass ran: %+v", sum.Runs)
	}
}

// TestOnce_StrandDeletedBeforeRead deletes a strand after the pass found
// it changed and before its run read it: no run of a note that is not
// there, no error, and the rest of the vault is served.
func TestOnce_StrandDeletedBeforeRead(t *testing.T) {
	e := newEnv(t)
	e.useAgent("", fakeagent.Echo)
	e.write("kept.md", "# Kept\n")
	e.onceFresh()
	e.write("fleeting.md", "# Here and gone\n")
	e.write("kept.md", "# Kept, edited\n")
	v := e.open()
	probeOf(v).scheduledFn = func(*scheduler.Scheduler[Job]) { e.remove("fleeting.md") }
	sum := e.once(v, false)
	e.close(v)
	if sum.Ran != 1 || sum.OK != 1 || sum.Runs[0].Strand != "kept.md" {
		t.Errorf("runs %+v; want one ok run of kept.md", sum.Runs)
	}
	if e.exists("fleeting.tieoff.md") {
		t.Error("the deleted strand got a tie-off")
	}
}

// TestOnce_ReadOnlyTieOff: a tie-off the user made immutable cannot take
// the reply: the run is reported failed with a clear message, the reply
// stays journaled, other strands are served, and once the user allows it
// the reply is appended exactly once.
func TestOnce_ReadOnlyTieOff(t *testing.T) {
	e := newEnv(t)
	e.useAgent("", fakeagent.Echo)
	e.write("locked.md", "# Locked\n")
	e.onceFresh()
	e.write("locked.md", "# Locked, edited\n")
	e.write("locked.tieoff.md", "")
	mustDo(t, os.Chmod(e.abs("locked.tieoff.md"), 0o444))
	unlock := func() {}
	if os.Geteuid() == 0 {
		// Root writes a 0444 file anyway: make it immutable instead.
		chattr, err := exec.LookPath("chattr")
		if err != nil {
			t.Skip("running as root without chattr: root ignores chmod 0444, so a read-only tie-off cannot be made")
		}
		if out, err := exec.Command(chattr, "+i", e.abs("locked.tieoff.md")).CombinedOutput(); err != nil {
			t.Skipf("running as root and chattr +i fails: %v %s (the file system may not support it)", err, out)
		}
		unlock = func() {
			if out, err := exec.Command(chattr, "-i", e.abs("locked.tieoff.md")).CombinedOutput(); err != nil {
				t.Errorf("chattr -i: %v %s", err, out)
			}
		}
		t.Cleanup(unlock)
	}
	e.write("free.md", "# Free\n")

	sum, log := e.onceLogged()
	if sum.Ran != 2 || sum.Failed != 1 || sum.OK != 1 {
		t.Errorf("summary %+v; want one ok and one failed run", sum)
	}
	if !strings.Contains(log, "locked.md") || !strings.Contains(log, "tie-off") {
		t.Errorf("the log does not explain the tie-off failure:\n%s", log)
	}
	if len(e.sections("free.md")) != 1 {
		t.Error("free.md was not served")
	}
	unlock()
	mustDo(t, os.Chmod(e.abs("locked.tieoff.md"), 0o644))
	e.onceFresh()
	e.assertWhole([]string{"locked.md", "free.md"})
}

// TestOnce_BrokenAgents: an agent that prints 100 MiB, one that never
// exits, one that exits 0 with nothing, and one whose child outlives it
// each give a failure section (or a capped reply) with a clear reason, and
// no process of theirs survives the pass.
func TestOnce_BrokenAgents(t *testing.T) {
	e := newEnv(t)
	cfg := "default_agent: fake\nagents:\n" + e.fakeAgentYAML("fake", "", fakeagent.Echo) +
		e.fakeAgentYAML("huge", "", fakeagent.Huge, strconv.Itoa(100<<20)) +
		e.fakeAgentYAML("hang", "", fakeagent.Hang) + "    timeout: 1s\n" +
		e.fakeAgentYAML("empty", "", fakeagent.Empty) +
		e.fakeAgentYAML("stubborn", "", fakeagent.Stubborn, "exit") + "    timeout: 2s\n"
	e.userConfig(cfg)
	e.onceFresh()
	for _, a := range []string{"huge", "hang", "empty", "stubborn"} {
		e.write(a+".md", "---\nknot_agent: "+a+"\n---\n# "+a+"\n")
	}
	e.write("good.md", "# Good\n")
	sum, log := e.onceLogged()
	byStrand := map[string]RunReport{}
	for _, r := range sum.Runs {
		byStrand[r.Strand] = r
	}
	if r := byStrand["good.md"]; string(r.Outcome) != "ok" {
		t.Errorf("good.md: %s %s; want ok", r.Outcome, r.Reason)
	}
	for _, a := range []string{"hang", "empty"} {
		secs := e.sections(a + ".md")
		if len(secs) != 1 || !secs[0].Failed {
			t.Errorf("%s: %+v; want one failure section", a, secs)
		}
		if !strings.Contains(log, a+".md") {
			t.Errorf("the log does not mention %s.md", a)
		}
	}
	if r := byStrand["hang.md"]; string(r.Outcome) != "timeout" {
		t.Errorf("hang.md: outcome %s; want timeout", r.Outcome)
	}
	if secs := e.sections("huge.md"); len(secs) != 1 {
		t.Errorf("huge.md: %d sections; want 1", len(secs))
	} else if fi, err := os.Stat(e.abs("huge.tieoff.md")); err != nil || fi.Size() > 20<<20 {
		t.Errorf("huge.md: tie-off %v, %v; want the reply capped", fi.Size(), err)
	}
	if len(e.sections("stubborn.md")) != 1 {
		t.Error("stubborn.md: want one section")
	}
	b, err := os.ReadFile(filepath.Join(e.state, fakeagent.GrandchildPIDFile))
	mustDo(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	mustDo(t, err)
	testutil.WaitFor(t, waitTimeout, "the stubborn agent's child to be gone", func() bool {
		err := syscall.Kill(pid, 0)
		return errors.Is(err, syscall.ESRCH)
	})
	if sum.Failed < 2 {
		t.Errorf("%d failed runs; want at least hang and empty", sum.Failed)
	}
}

// TestOnce_UnreadableStrand: a strand knotd may not read is reported in
// the log and counted as a failed run; the rest of the vault is served.
// Root reads any file whatever its mode, so the test cannot make one
// there and skips.
func TestOnce_UnreadableStrand(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root, which reads a chmod 000 file anyway: an unreadable strand cannot be made")
	}
	e := newEnv(t)
	e.useAgent("", fakeagent.Echo)
	e.onceFresh()
	e.write("secret.md", "# Secret\n")
	mustDo(t, os.Chmod(e.abs("secret.md"), 0))
	t.Cleanup(func() { _ = os.Chmod(e.abs("secret.md"), 0o644) })
	e.write("good.md", "# Good\n")
	sum, log := e.onceLogged()
	if sum.Failed != 1 || sum.OK != 1 {
		t.Errorf("summary: %d ran, %d ok, %d failed; want one failed and one ok run", sum.Ran, sum.OK, sum.Failed)
	}
	if !strings.Contains(log, "secret.md") || !strings.Contains(log, "permission denied") {
		t.Errorf("the log does not explain secret.md:\n%.3000s", log)
	}
	if len(e.sections("good.md")) != 1 {
		t.Error("good.md was not served")
	}
	if sum := e.onceFresh(); sum.Ran != 0 {
		t.Errorf("a second pass ran again: %d runs", sum.Ran)
	}
	if secs := e.sections("secret.md"); len(secs) != 1 || !secs[0].Failed {
		t.Errorf("secret.md: %d sections; want one failure section", len(e.sections("secret.md")))
	}
	mustDo(t, os.Chmod(e.abs("secret.md"), 0o644))
	e.write("secret.md", "# Secret, readable\n")
	if sum := e.onceFresh(); sum.Ran != 1 || sum.OK != 1 {
		t.Errorf("after the fix: %d ran, %d ok; want one ok run", sum.Ran, sum.OK)
	}
}
