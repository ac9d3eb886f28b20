//go:build unix

package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/testutil"
	"github.com/stretchr/testify/require"
)

// chromiumBin is the browser the console's end-to-end tests drive:
// KNOT_CHROMIUM_BIN (scripts/test sets it from scripts/install-chromium),
// else chromium on PATH. Without one the test skips, loudly, unless
// KNOT_REQUIRE_CHROMIUM=1 makes that a failure.
func chromiumBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("KNOT_CHROMIUM_BIN")
	if bin == "" {
		for _, name := range []string{"chromium", "chromium-browser"} {
			if p, err := exec.LookPath(name); err == nil {
				bin = p
				break
			}
		}
	}
	if bin == "" {
		const why = "no Chromium: set KNOT_CHROMIUM_BIN or run scripts/install-chromium (scripts/test does)"
		if os.Getenv("KNOT_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("KNOT_REQUIRE_CHROMIUM=1 but " + why)
		}
		t.Skip("SKIPPED: the console's browser test needs a browser: " + why)
	}
	return bin
}

// browser starts headless Chromium and returns a context that drives one
// of its tabs; it ends with the test.
func browser(t *testing.T) context.Context {
	t.Helper()
	bin := chromiumBin(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // waits for the browser to exit
	})
	if err := chromedp.Do(ctx); err != nil { // starts it

		if os.Getenv("KNOT_REQUIRE_CHROMIUM") == "1" {
			t.Fatalf("KNOT_REQUIRE_CHROMIUM=1 but %s does not start: %v", bin, err)
		}
		t.Skipf("SKIPPED: %s does not start: %v", bin, err)
	}
	return ctx
}

// startConsole starts knotd console --no-open on vault as its own process
// and returns its address. It is interrupted at the end of the test, and
// must then exit 0.
func startConsole(t *testing.T, vault string) string {
	t.Helper()
	cmd := knotdProcess(t, "console", "--no-open", vault)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr testutil.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState != nil {
			return
		}
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			if code := exitStatus(t, err); code != exitOK {
				t.Errorf("knotd console after SIGINT: exit %d; want 0\n%s", code, stderr.String())
			}
		case <-time.After(waitTimeout):
			_ = cmd.Process.Kill()
			t.Errorf("knotd console did not stop within %v of SIGINT\n%s", waitTimeout, stderr.String())
		}
	})
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n') // the rest of stdout is not read: it prints nothing more
		line <- strings.TrimSpace(l)
	}()
	select {
	case u := <-line:
		require.Regexp(t, `^http://127\.0\.0\.1:\d+/t/[A-Za-z0-9_-]{43}/$`, u, "knotd console's first line\n%s", stderr.String())
		return u
	case err := <-exited:
		t.Fatalf("knotd console exited (%v) before printing its address:\n%s", err, stderr.String())
	case <-time.After(waitTimeout):
		t.Fatalf("knotd console printed no address within %v:\n%s", waitTimeout, stderr.String())
	}
	return ""
}

// TestConsole_EndToEnd drives the console in a real browser, against a
// real watching knotd and a real knotd console: the running run and its
// output, appearing live; the Run, Pause and Resume buttons; the tie-off
// rendered as HTML, safely; a failure, and its Retry button. Then the guards, with plain HTTP requests: no
// token, a foreign Host, a POST from a foreign Origin.
func TestConsole_EndToEnd(t *testing.T) {
	ctx := browser(t)
	v, c := setup(t)
	state := t.TempDir()
	gate := filepath.Join(t.TempDir(), "gate")
	reply := "Answered with **bold** words, <script>window.knotPwned = 1</script> and [a link](javascript:window.knotPwned=2)."
	writeFile(t, filepath.Join(c, "config.yaml"), fmt.Sprintf(
		"default_agent: c\nagents:\n  c:\n    preset: claude\n    command: [%q]\n    env: {%s: %s, %s: %q, %s: %q, %s: %q}\n"+
			"  bad:\n    preset: claude\n    command: [%[1]q]\n    env: {%[2]s: %[3]s, %[4]s: %[5]q, %[10]s: error}\n",
		fakeagent.Program(t), fakeagent.EnvBehaviour, fakeagent.Claude, fakeagent.EnvState, state,
		fakeagent.EnvGate, gate, fakeagent.EnvReply, reply, fakeagent.EnvFail))
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	writeFile(t, filepath.Join(v, "b.md"), "# B\n")
	writeFile(t, filepath.Join(v, "c.md"), "---\nknot_agent: bad\n---\n# C\n") // its agent fails
	if out, err := knotdProcess(t, "--once", v).CombinedOutput(); err != nil { // adopts
		t.Fatalf("knotd --once: %v\n%s", err, out)
	}
	startWatching(t, "--debounce", "50ms", v)
	base := startConsole(t, v)

	// a.md changes: its run starts, prints its output and waits at the
	// gate.
	writeFile(t, filepath.Join(v, "a.md"), "# A\n\nchanged\n")
	var run control.Running
	testutil.WaitFor(t, waitTimeout, "a.md's run to start", func() bool {
		_, st := status(t, v)
		if len(st.Running) == 1 {
			run = st.Running[0]
		}
		return run.Note == "a.md"
	})

	// Each step runs within waitTimeout; a failed one shows the page.
	fail := func(what string, err error) {
		t.Helper()
		page, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
		t.Fatalf("%s: %v\npage:\n%s", what, err, page)
	}
	step := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, waitTimeout)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			fail(what, err)
		}
	}
	get := func(what string, a chromedp.Action[string]) string {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, waitTimeout)
		defer cancel()
		v, err := chromedp.Run(sctx, a)
		if err != nil {
			fail(what, err)
		}
		return v
	}
	text := func(sel string) string {
		t.Helper()
		return strings.TrimSpace(get("the text of "+sel, chromedp.Text(chromedp.CSS(sel))))
	}
	visible := func(sel string) chromedp.Action[chromedp.Void] { return chromedp.WaitVisible(chromedp.CSS(sel)) }
	click := func(sel string) chromedp.Action[chromedp.Void] { return chromedp.Click(chromedp.CSS(sel)) }
	// safe: the tie-off's HTML kept no script, ran none, and has no
	// javascript: link.
	safe := func() {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, waitTimeout)
		defer cancel()
		n, err := chromedp.Run(sctx, chromedp.Evaluate[int](`document.querySelectorAll('#tieoff script').length + `+
			`(window.knotPwned === undefined ? 0 : 100) + `+
			`[...document.querySelectorAll('#tieoff a')].filter(a => a.href.startsWith('javascript:')).length`))
		if err != nil {
			fail("look for scripts", err)
		}
		require.Zero(t, n, "the tie-off's HTML kept a script (1s), ran one (100s) or kept a javascript: link")
	}

	step("the overview shows the running run",
		chromedp.Navigate(base),
		visible(`#activity section.running a.run`))
	s := text(`#activity section.running`)
	require.Contains(t, s, "a.md")
	require.Contains(t, s, run.RunID)
	pctx, cancel := context.WithTimeout(ctx, waitTimeout)
	_, err := chromedp.Run(pctx, chromedp.Poll[bool](
		`(document.querySelector('#activity section.running td.output') || {textContent: ''}).textContent.includes('Answered with')`))
	cancel()
	if err != nil {
		fail("the run's output so far on the overview (refreshed every 2s)", err)
	}
	step("the run's page shows its output while it runs",
		click(`#activity section.running a.run`),
		visible(`#state.live`),
		visible(`#events .ev-message-assistant`))
	s = text(`#events .ev-message-assistant`)
	require.Contains(t, s, "Reading the note.") // the fake's thinking
	require.Contains(t, s, "Answered with **bold** words")
	loc := get("the run page's address", chromedp.Location())
	require.True(t, strings.HasSuffix(loc, "/run/"+run.RunID), loc)

	// The run goes on: its end reaches the open page live.
	writeFile(t, gate, "")
	step("the run's end appears live",
		visible(`#events .ev-run-finished.live`),
		visible(`#events .ev-tieoff-appended.live`),
		visible(`#state.done`))
	require.Equal(t, "ok", text(`#state`))
	require.Contains(t, text(`#events .ev-run-finished`), "$0.0002") // what the fake Claude reports

	// a.md's page: the tie-off rendered, safely, beside the run.
	step("a.md's page",
		chromedp.Navigate(base+"note?path=a.md"),
		visible(`#tieoff article.section .reply strong`))
	require.Equal(t, "bold", text(`#tieoff article.section .reply strong`))
	require.Contains(t, text(`#tieoff article.section .reply`), "Answered with bold words")
	safe()
	s = text(`#runs`)
	require.Contains(t, s, "ok")
	require.Contains(t, s, "$0.0002")

	// b.md, unchanged: Run answers it; Pause and Resume.
	step("Run on b.md's page",
		chromedp.Navigate(base+"note?path=b.md"),
		visible(`#tieoff`),
		click(`.actions button.run`),
		visible(`#msg`))
	require.Equal(t, "queued b.md", text(`#msg`))
	step("b.md answered, on its page", visible(`#tieoff article.section .reply strong`))
	require.Contains(t, text(`#tieoff article.section .sechead`), "Modified")
	safe()
	step("Pause b.md",
		click(`.actions button.pause`),
		visible(`.actions button.resume`))
	require.Equal(t, "paused b.md", text(`#msg`))
	_, st := status(t, v)
	require.Len(t, st.Paused, 1)
	require.Equal(t, "b.md", st.Paused[0].Note)
	require.Equal(t, "paused from the console", st.Paused[0].Why)
	step("Resume b.md",
		click(`.actions button.resume`),
		visible(`.actions button.pause`))
	require.Equal(t, "resumed b.md", text(`#msg`))
	_, st = status(t, v)
	require.Empty(t, st.Paused)

	// c.md's run fails: the overview lists it, and Retry runs it again.
	writeFile(t, filepath.Join(v, "c.md"), "---\nknot_agent: bad\n---\n# C\n\nchanged\n")
	testutil.WaitFor(t, waitTimeout, "c.md's run to fail", func() bool {
		_, st = status(t, v)
		return len(st.Failures) == 1 && len(st.Running) == 0
	})
	step("the failure on the overview",
		chromedp.Navigate(base),
		visible(`#activity section.failures td form button`))
	s = text(`#activity section.failures`)
	require.Contains(t, s, "c.md")
	require.Contains(t, s, "API Error: 401") // the reason, from the run's transcript
	step("Retry c.md",
		click(`#activity section.failures td form button`),
		visible(`#msg`))
	require.Equal(t, "queued c.md", text(`#msg`))
	testutil.WaitFor(t, waitTimeout, "c.md's retry", func() bool {
		_, st = status(t, v)
		return st.Today.Failed == 2 && len(st.Running) == 0
	})

	// The overview lists the notes with their last runs.
	step("the overview", chromedp.Navigate(base), visible(`#notes`))
	s = text(`#notes`)
	require.Contains(t, s, "a.md")
	require.Contains(t, s, "b.md")
	require.Contains(t, s, "$0.0002")
	require.Regexp(t, `c\.md\s.*failed`, s)

	// The guards, seen from outside.
	u, err := url.Parse(base)
	require.NoError(t, err)
	origin := "http://" + u.Host
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, target, host, origin string) int {
		t.Helper()
		var body *strings.Reader
		if method == http.MethodPost {
			body = strings.NewReader(url.Values{"op": {"run"}, "note": {"a.md"}}.Encode())
		} else {
			body = strings.NewReader("")
		}
		req, err := http.NewRequest(method, target, body)
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return resp.StatusCode
	}
	runsBefore := len(tieoffSections(t, filepath.Join(v, "a.tieoff.md")))
	require.Equal(t, http.StatusOK, do(http.MethodGet, base, "", ""), "the console's own address")
	require.Equal(t, http.StatusNotFound, do(http.MethodGet, origin+"/", "", ""), "without the token")
	require.Equal(t, http.StatusNotFound, do(http.MethodGet, origin+"/t/"+strings.Repeat("A", 43)+"/", "", ""), "with another token")
	require.Equal(t, http.StatusMisdirectedRequest, do(http.MethodGet, base, "attacker.example:"+u.Port(), ""), "with a foreign Host")
	require.Equal(t, http.StatusForbidden, do(http.MethodPost, base+"act", "", "http://attacker.example"), "a POST from a foreign Origin")
	require.Equal(t, http.StatusForbidden, do(http.MethodPost, base+"act", "", ""), "a POST without Origin")
	// The refused POSTs queued nothing; the console's own one does.
	require.Equal(t, http.StatusSeeOther, do(http.MethodPost, base+"act", "", origin), "a POST from the console's page")
	testutil.WaitFor(t, waitTimeout, "a.md's run from the last POST", func() bool {
		return len(tieoffSections(t, filepath.Join(v, "a.tieoff.md"))) == runsBefore+1
	})
	_, st = status(t, v)
	today := st.Today
	require.Equal(t, []int{5, 3, 2}, []int{today.Runs, today.OK, today.Failed},
		"runs: a.md's change, b.md's Run, c.md's change and its retry, and a.md's POST; nothing else")
}
