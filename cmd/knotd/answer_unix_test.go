//go:build unix

package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/question"
	"github.com/stretchr/testify/require"
)

// TestAnswer_RealDaemon: a watching knotd serves the questions and the
// answers on its socket: status lists the questions (none), and an answer
// to an id no question has reaches the vault through it and comes back
// as the command's exit 1, saying that none waits.
func TestAnswer_RealDaemon(t *testing.T) {
	v, _ := setup(t)
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	if out, err := knotdProcess(t, "--once", v).CombinedOutput(); err != nil { // adopts
		t.Fatalf("knotd --once: %v\n%s", err, out)
	}
	startWatching(t, v)
	running, st := status(t, v)
	require.True(t, running)
	require.NotNil(t, st.Questions)
	require.Empty(t, st.Questions)

	out, err := knotdProcess(t, "deny", "3f9a2c1b", "--why", "no", v).CombinedOutput()
	require.Equal(t, exitFailed, exitStatus(t, err), "%s", out)
	require.Equal(t, "knotd deny: no question 3f9a2c1b waits (it was answered already, or there is none): no question waits\n", string(out))
}

// TestConsole_AnswerInBrowser drives the console's questions in a real
// browser on a phone-sized screen, against a real knotd console and a
// stand-in daemon on the vault's socket: the questions fit the screen
// with their buttons, Deny sends the reason typed, Approve answers, each
// from the console, and the page says what each did.
func TestConsole_AnswerInBrowser(t *testing.T) {
	ctx := browser(t)
	v, _ := setup(t)
	writeFile(t, filepath.Join(v, "a.md"), "# A\n")
	if out, err := knotdProcess(t, "--once", v).CombinedOutput(); err != nil { // makes the vault
		t.Fatalf("knotd --once: %v\n%s", err, out)
	}
	now := time.Now().UTC()
	edit := question.Call{Tool: "Write", Kind: question.KindEdit, Path: "notes/plan.md", Why: "The plan needs a date.",
		Diff: "--- a/notes/plan.md\n+++ b/notes/plan.md\n@@ -1 +1,2 @@\n # Plan\n+Ship on " + strings.Repeat("a very long line that must wrap on a phone ", 5) + "\n"}
	cmdCall := question.Call{Tool: "Bash", Kind: question.KindCommand, Command: "psql -c 'DROP TABLE users'"}
	d := &questionDaemon{waiting: []control.Question{
		{ID: "3f9a2c1b", Note: "notes/plan.md", Agent: "claude", Asked: now.Add(-5 * time.Minute), Summary: control.Summary(edit), Call: edit},
		{ID: "77aa0011", Note: "db.md", Agent: "claude", Asked: now.Add(-time.Minute), Summary: control.Summary(cmdCall), Call: cmdCall},
	}}
	serveDaemon(t, v, d)
	base := startConsole(t, v)

	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, waitTimeout)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			page, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
			t.Fatalf("%s: %v\npage:\n%s", what, err, page)
		}
	}
	get := func(what string, a chromedp.Action[string]) string {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, waitTimeout)
		defer cancel()
		s, err := chromedp.Run(sctx, a)
		require.NoError(t, err, what)
		return strings.TrimSpace(s)
	}
	q := func(id, sel string) string { return `#questions article[data-question="` + id + `"] ` + sel }

	do("the questions on a phone-sized screen",
		chromedp.EmulateViewport(390, 844),
		chromedp.Navigate(base),
		chromedp.WaitVisible(chromedp.CSS(q("3f9a2c1b", "button.approve"))))
	require.Contains(t, get("the edit", chromedp.Text(chromedp.CSS(q("3f9a2c1b", ".qhead")))), "claude asks to edit notes/plan.md (Write)")
	require.Contains(t, get("the diff", chromedp.Text(chromedp.CSS(q("3f9a2c1b", "pre.diff")))), "+Ship on a very long line")
	require.Contains(t, get("the command", chromedp.Text(chromedp.CSS(q("77aa0011", "pre.command")))), "psql -c 'DROP TABLE users'")
	sctx, cancel := context.WithTimeout(ctx, waitTimeout)
	fits, err := chromedp.Run(sctx, chromedp.Evaluate[bool](`(() => {
		const w = document.documentElement.clientWidth;
		const qs = document.querySelector('#questions');
		return qs.scrollWidth <= w && [...qs.querySelectorAll('button, input[name=why]')].every(b => b.getBoundingClientRect().right <= w);
	})()`))
	cancel()
	require.NoError(t, err)
	require.True(t, fits, "the questions, their reason fields and buttons fit a 390px wide screen")

	do("Deny, with a reason",
		chromedp.SendKeys(chromedp.CSS(q("77aa0011", "input[name=why]")), "not on the live db"),
		chromedp.Click(chromedp.CSS(q("77aa0011", "button.deny"))),
		chromedp.WaitVisible(chromedp.CSS("#msg")))
	require.Equal(t, "denied 77aa0011 (db.md: run `psql -c 'DROP TABLE users'` (Bash)): knotd continues the run now", get("the message", chromedp.Text(chromedp.CSS("#msg"))))
	do("Approve, from the overview afresh",
		chromedp.Navigate(base),
		chromedp.WaitVisible(chromedp.CSS(q("3f9a2c1b", "button.approve"))),
		chromedp.Click(chromedp.CSS(q("3f9a2c1b", "button.approve"))),
		chromedp.WaitVisible(chromedp.CSS("#msg")))
	require.Equal(t, "approved 3f9a2c1b (notes/plan.md: edit notes/plan.md (Write)): knotd continues the run now", get("the message", chromedp.Text(chromedp.CSS("#msg"))))
	require.Equal(t, []string{`deny 77aa0011 "not on the live db" console`, `approve 3f9a2c1b "" console`}, d.answered())
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#questions').length`))
	require.NoError(t, err)
	require.Zero(t, n, "no question waits: the section is gone")
}
