package vault

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
)

// TestRetryable_OnlyWhatARetryCanHelp: knotd retry (and the console's
// Retry) leaves, saying why, a failed note a retry cannot help: one gone
// since, one a rule now keeps from every agent, one whose own content is
// still the failure; it retries the others, a note fixed since included.
// Status says the same of each failure.
func TestRetryable_OnlyWhatARetryCanHelp(t *testing.T) {
	e := newEnv(t)
	agent := "default_agent: fake\nagents:\n" + e.fakeAgentYAML("fake", "", fakeagent.Fail)
	e.userConfig(agent)
	e.onceFresh() // adopts the empty vault
	notes := map[string]string{
		"agent.md":   "# A\n",                          // the agent fails
		"front.md":   "---\nknot_agent: [\n---\n# F\n", // frontmatter knotd cannot read
		"nul.md":     "# N\x00\n",                      // binary
		"gone.md":    "# G\n",
		"off/o.md":   "# O\n",
		"fixed.md":   "---\nknot_agent: [\n---\n# X\n",
		"model.md":   "---\nknot_model: --yolo\n---\n# M\n",
		"retried.md": "# R\n",
	}
	for rel, content := range notes {
		e.write(rel, content)
	}
	sum := e.onceFresh()
	if sum.Failed != len(notes) {
		t.Fatalf("%d of %d runs failed; want all: %+v", sum.Failed, len(notes), sum.Runs)
	}
	e.remove("gone.md")
	e.write("fixed.md", "# X, fixed\n")
	e.userConfig(agent + "rules:\n  - path: off/\n    mode: off\n")

	v := e.open()
	rels, refused, err := v.Control().Retryable(time.Time{})
	mustDo(t, err)
	if want := []string{"agent.md", "fixed.md", "retried.md"}; !slices.Equal(rels, want) {
		t.Errorf("Retryable = %v; want %v", rels, want)
	}
	wantWhy := map[string]string{
		"front.md": "its frontmatter cannot be read",
		"nul.md":   "it holds NUL bytes",
		"gone.md":  "the note is deleted",
		"off/o.md": `rule path "off/"`,
		"model.md": "its knotd settings cannot be used",
	}
	got := map[string]string{}
	for _, r := range refused {
		got[r.Note] = r.Why
	}
	for note, want := range wantWhy {
		if !strings.Contains(got[note], want) {
			t.Errorf("%s: refused with %q; want it to say %q", note, got[note], want)
		}
	}
	if len(got) != len(wantWhy) {
		t.Errorf("refused %v; want only %v", got, wantWhy)
	}
	st, err := v.Control().Status(context.Background())
	mustDo(t, err)
	for _, f := range st.Failures {
		if f.NoRetry != got[f.Note] {
			t.Errorf("status: %s's NoRetry = %q; want %q", f.Note, f.NoRetry, got[f.Note])
		}
	}
}
