package console

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/question"
	"github.com/stretchr/testify/require"
)

// questionsFixture is a console whose daemon has two questions waiting:
// an edit, whose agent said something hostile, with a long diff, and a
// call of another kind, with its input only.
func questionsFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	now := time.Date(2026, 11, 28, 11, 0, 0, 0, time.UTC)
	edit := question.Call{Tool: "Write", Kind: question.KindEdit, Path: "notes/plan.md",
		Why:  "I will <script>window.x=1</script> tidy it",
		Diff: "--- a/notes/plan.md\n+++ b/notes/plan.md\n+<b>new</b> line\n" + strings.Repeat("+more\n", 3000)}
	other := question.Call{Tool: "mcp__db__query", Kind: question.KindOther, Input: json.RawMessage(`{"sql":"DROP TABLE <t>"}`)}
	f.b.status.Now = now
	f.b.status.Questions = []control.Question{
		{ID: "3f9a2c1b", Note: "notes/plan.md", Agent: "claude", RunID: "r1", Asked: now.Add(-5 * time.Minute), Summary: control.Summary(edit), Call: edit},
		{ID: "77aa0011", Note: "b.md", Agent: "gemini", Asked: now.Add(-2 * time.Hour), Summary: control.Summary(other), Call: other},
	}
	return f
}

// TestConsole_Questions: the overview lists the questions that wait with
// what each call does, escaped and bounded, and Approve and Deny buttons
// that post to the console.
func TestConsole_Questions(t *testing.T) {
	f := questionsFixture(t)
	for _, target := range []string{base, base + "activity"} {
		w := f.get(t, target)
		require.Equal(t, 200, w.Code)
		page := w.Body.String()
		for _, want := range []string{
			"Questions waiting for your answer (2)",
			"claude asks to edit notes/plan.md (Write)", "asked 5m ago", "<code>3f9a2c1b</code>",
			"I will &lt;script&gt;window.x=1&lt;/script&gt; tidy it",    // the agent's words, escaped
			"&#43;&lt;b&gt;new&lt;/b&gt; line",                          // the diff, escaped
			"cut here: the note&#39;s tie-off shows the question whole", // and bounded
			"gemini asks to use mcp__db__query", "asked 2h0m ago",
			"&#34;sql&#34;: &#34;DROP TABLE &lt;t&gt;&#34;", // the input, indented
			`<form class="answer" method="post" action="` + base + `answer"><input type="hidden" name="id" value="3f9a2c1b">`,
			`<button class="approve" name="verdict" value="approve">Approve</button>`,
			`<button class="deny" name="verdict" value="deny">Deny</button>`,
			`<input type="text" name="why"`,
		} {
			require.Contains(t, page, want, target)
		}
		require.NotContains(t, page, "<script>window")
		require.NotContains(t, page, "<b>new</b>")
		require.Less(t, len(page), 2*maxShown+16<<10, "the long diff is bounded")
	}
	// A note's page shows its own questions, and its buttons come back
	// to it.
	page := f.get(t, base+"note?path=b.md").Body.String()
	require.Contains(t, page, "Questions waiting for your answer (1)")
	require.Contains(t, page, "gemini asks to use mcp__db__query")
	require.Contains(t, page, `<input type="hidden" name="back" value="b.md">`)
	require.NotContains(t, page, "3f9a2c1b")
	require.NotContains(t, f.get(t, base+"note?path=a.md").Body.String(), "Questions waiting")
	require.NotContains(t, f.get(t, base).Body.String(), `name="back"`)
	// None waits: no section.
	f.b.status.Questions = nil
	require.NotContains(t, f.get(t, base).Body.String(), "Questions waiting")
}

// TestConsole_Answer: the buttons answer through the daemon, from the
// console, and the page says what the answer did; what is no whole id,
// no approve or deny, or a reason too long is refused before the daemon
// is asked; the daemon's refusals are said.
func TestConsole_Answer(t *testing.T) {
	f := questionsFixture(t)
	for _, tc := range []struct {
		form url.Values
		code int
		call string
		msg  string
	}{
		{url.Values{"id": {"3f9a2c1b"}, "verdict": {"approve"}}, 303, `approve 3f9a2c1b "" console`,
			"approved 3f9a2c1b (notes/plan.md: edit notes/plan.md (Write)): knotd continues the run now"},
		{url.Values{"id": {"77aa0011"}, "verdict": {"deny"}, "why": {"  not on the\nlive db "}}, 303, `deny 77aa0011 "not on the live db" console`,
			"denied 77aa0011 (b.md: use mcp__db__query): knotd continues the run now"},
		{url.Values{"id": {"3f9a2c1b"}, "verdict": {"deny"}, "back": {"notes/plan.md"}}, 303, `deny 3f9a2c1b "" console`,
			"no question 3f9a2c1b waits (it was answered already, or there is none): no question waits"},
		{url.Values{"id": {"3f9a"}, "verdict": {"approve"}}, 400, "", ""},
		{url.Values{"id": {"../../x"}, "verdict": {"approve"}}, 400, "", ""},
		{url.Values{"id": {"3f9a2c1b"}, "verdict": {"withdraw"}}, 400, "", ""},
		{url.Values{"id": {"3f9a2c1b"}}, 400, "", ""},
		{url.Values{"id": {"3f9a2c1b"}, "verdict": {"deny"}, "why": {strings.Repeat("x", question.MaxWhy+1)}}, 400, "", ""},
	} {
		before := len(f.b.Calls())
		w := f.post(t, base+"answer", tc.form, orig)
		require.Equal(t, tc.code, w.Code, "%v: %s", tc.form, w.Body.String())
		calls := f.b.Calls()[before:]
		if tc.call == "" {
			require.Empty(t, calls, "%v", tc.form)
			continue
		}
		require.Equal(t, []string{tc.call}, calls)
		loc, err := url.Parse(w.Header().Get("Location"))
		require.NoError(t, err)
		if back := tc.form.Get("back"); back != "" {
			require.Equal(t, base+"note", loc.Path)
			require.Equal(t, back, loc.Query().Get("path"))
		} else {
			require.Equal(t, base, loc.Path)
		}
		require.Equal(t, tc.msg, loc.Query().Get("msg"))
	}
	// With no daemon, the page says so, and how to answer without it.
	f.b.err = control.ErrNoDaemon
	w := f.post(t, base+"answer", url.Values{"id": {"77aa0011"}, "verdict": {"approve"}}, orig)
	loc, err := url.Parse(w.Header().Get("Location"))
	require.NoError(t, err)
	require.Equal(t, "no knotd is running for this vault: start it (knotd VAULT) to answer from here, or answer with knotd approve 77aa0011", loc.Query().Get("msg"))
}

// TestConsole_AnswerGuards: an answer, like every change, must come from
// the console's own page: with its token, Host and Origin, by POST.
func TestConsole_AnswerGuards(t *testing.T) {
	f := questionsFixture(t)
	form := url.Values{"id": {"3f9a2c1b"}, "verdict": {"approve"}}.Encode()
	for _, tc := range []struct {
		name, method, target, host, origin, site string
		want                                     int
	}{
		{"a POST without Origin", "POST", base + "answer", addr, "", "", 403},
		{"a POST from another page", "POST", base + "answer", addr, "http://evil.example", "cross-site", 403},
		{"a POST from another local port", "POST", base + "answer", addr, "http://127.0.0.1:9999", "same-site", 403},
		{"a POST with the Origin but sent cross-site", "POST", base + "answer", addr, orig, "cross-site", 403},
		{"a POST with null Origin", "POST", base + "answer", addr, "null", "", 403},
		{"a POST without token", "POST", "/t/" + strings.Repeat("x", len(token)) + "/answer", addr, orig, "", 404},
		{"a foreign Host", "POST", base + "answer", "evil.example:4242", orig, "", 421},
		{"a GET", "GET", base + "answer?" + form, addr, "", "", 405},
		{"a PUT", "PUT", base + "answer", addr, orig, "", 405},
		{"the page's own POST", "POST", base + "answer", addr, orig, "same-origin", 303},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.target, strings.NewReader(form))
			req.Host = tc.host
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.site != "" {
				req.Header.Set("Sec-Fetch-Site", tc.site)
			}
			w := httptest.NewRecorder()
			f.c.ServeHTTP(w, req)
			require.Equal(t, tc.want, w.Code, w.Body.String())
		})
	}
	// Only the page's own answer reached the daemon.
	require.Equal(t, []string{`approve 3f9a2c1b "" console`}, f.b.Calls())
}
