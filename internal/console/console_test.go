package console

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/strand"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/knotd/knotd/internal/transcript"
	"github.com/stretchr/testify/require"
)

const (
	addr  = "127.0.0.1:4242"
	token = "tok-0123456789abcdefghijklmnopqrstuvwxyzABCD"
	base  = "/t/" + token + "/"
	orig  = "http://" + addr
)

// fakeBackend records the calls it gets and answers with status.
type fakeBackend struct {
	mu     sync.Mutex
	status control.Status
	err    error
	calls  []string
	result *control.Result // what the commands answer (nil: Done is the call)
}

func (f *fakeBackend) call(s string) (control.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, s)
	if f.result != nil {
		return *f.result, f.err
	}
	return control.Result{Done: []string{s}}, f.err
}

func (f *fakeBackend) Status(context.Context) (control.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status, f.err
}
func (f *fakeBackend) Run(_ context.Context, notes []string) (control.Result, error) {
	return f.call("run " + strings.Join(notes, ","))
}
func (f *fakeBackend) Retry(_ context.Context, since time.Time) (control.Result, error) {
	return f.call("retry " + since.String())
}
func (f *fakeBackend) Pause(_ context.Context, notes []string, why string) (control.Result, error) {
	return f.call("pause " + strings.Join(notes, ",") + " (" + why + ")")
}
func (f *fakeBackend) Resume(_ context.Context, notes []string) (control.Result, error) {
	return f.call("resume " + strings.Join(notes, ","))
}

func (f *fakeBackend) Questions(context.Context) ([]control.Question, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status.Questions, f.err
}

func (f *fakeBackend) Answer(_ context.Context, id string, v question.Verdict, why string, from question.Source) (control.Answered, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("%s %s %q %s", v, id, why, from))
	if f.err != nil {
		return control.Answered{}, f.err
	}
	for i, q := range f.status.Questions {
		if q.ID == id {
			f.status.Questions = slices.Delete(f.status.Questions, i, i+1)
			return control.Answered{Question: q, Verdict: v, Next: "knotd continues the run now"}, nil
		}
	}
	return control.Answered{}, control.NoQuestion("no question " + id + " waits (it was answered already, or there is none): no question waits")
}

func (f *fakeBackend) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

type fixture struct {
	c    *Console
	b    *fakeBackend
	root string
	runs string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	root := t.TempDir()
	runs := filepath.Join(t.TempDir(), "runs")
	b := &fakeBackend{status: control.Status{Vault: root, PID: 7, Answering: true, Agent: "claude", Device: "laptop"}}
	c, err := New(Options{Root: root, Backend: b, RunsDir: runs, Addr: addr, Token: token, Poll: 10 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return &fixture{c: c, b: b, root: root, runs: runs}
}

func (f *fixture) write(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(f.root, filepath.FromSlash(rel))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

// record writes a run's transcript: started, then payloads. It returns
// the open recorder.
func (f *fixture) record(t *testing.T, note string, payloads ...transcript.Payload) (string, *transcript.Recorder) {
	t.Helper()
	id := uuid.Must(uuid.NewV7()).String()
	r, err := transcript.Create(f.runs, id, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.Close() }) // closed already in most tests
	_, err = r.Record(transcript.Started{Strand: note, Event: strand.Modified, Agent: "claude"})
	require.NoError(t, err)
	for _, p := range payloads {
		_, err := r.Record(p)
		require.NoError(t, err)
	}
	return id, r
}

func (f *fixture) get(t *testing.T, target string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Host = addr
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	f.c.ServeHTTP(w, req)
	return w
}

func (f *fixture) post(t *testing.T, target string, form url.Values, origin string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	req.Host = addr
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	w := httptest.NewRecorder()
	f.c.ServeHTTP(w, req)
	return w
}

// TestConsole_Guards: only requests with the token, the console's own
// Host and, for changes, its own Origin are served.
func TestConsole_Guards(t *testing.T) {
	f := newFixture(t)
	form := url.Values{"op": {"run"}, "note": {"a.md"}}.Encode()
	for _, tc := range []struct {
		name, method, target, host, origin, site string
		want                                     int
	}{
		{"the overview", "GET", base, addr, "", "", 200},
		{"an asset", "GET", base + "static/console.js", addr, "", "", 200},
		{"no token", "GET", "/", addr, "", "", 404},
		{"no token, a page", "GET", "/activity", addr, "", "", 404},
		{"a wrong token", "GET", "/t/" + strings.Repeat("x", len(token)) + "/", addr, "", "", 404},
		{"a token's prefix", "GET", "/t/" + token[:20] + "/", addr, "", "", 404},
		{"the token, longer", "GET", "/t/" + token + "x/", addr, "", "", 404},
		{"a foreign Host (DNS rebinding)", "GET", base, "evil.example:4242", "", "", 421},
		{"localhost as Host", "GET", base, "localhost:4242", "", "", 421},
		{"another port", "GET", base, "127.0.0.1:4243", "", "", 421},
		{"a foreign Host without token", "GET", "/", "evil.example", "", "", 421},
		{"a POST from the page", "POST", base + "act", addr, orig, "same-origin", 303},
		{"a POST without Origin", "POST", base + "act", addr, "", "", 403},
		{"a POST from another page", "POST", base + "act", addr, "http://evil.example", "cross-site", 403},
		{"a POST from another local port", "POST", base + "act", addr, "http://127.0.0.1:9999", "same-site", 403},
		{"a POST with the Origin but sent cross-site", "POST", base + "act", addr, orig, "cross-site", 403},
		{"a POST with null Origin", "POST", base + "act", addr, "null", "", 403},
		{"a POST without token", "POST", "/act", addr, orig, "", 404},
		{"PUT", "PUT", base + "act", addr, orig, "", 405},
		{"DELETE", "DELETE", base, addr, orig, "", 405},
		{"POST to a page", "POST", base, addr, orig, "", 405},
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
			h := w.Header()
			require.Equal(t, "no-store", h.Get("Cache-Control"))
			require.Equal(t, "DENY", h.Get("X-Frame-Options"))
			require.Equal(t, "same-origin", h.Get("Referrer-Policy"))
			csp := h.Get("Content-Security-Policy")
			require.Contains(t, csp, "default-src 'none'")
			require.Contains(t, csp, "script-src 'self';")
			require.NotContains(t, csp, "unsafe")
			if w.Code >= 400 {
				require.NotContains(t, w.Body.String(), token)
			}
		})
	}
	// Of all those, only the one from the page reached the daemon.
	require.Equal(t, []string{"run a.md"}, f.b.Calls())
}

// TestConsole_Listen: only loopback addresses.
func TestConsole_Listen(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:0", true},
		{"0.0.0.0:0", false},
		{":0", false},
		{"localhost:0", false},
		{"192.0.2.1:0", false},
		{"[::]:0", false},
		{"127.0.0.1", false},
	} {
		ln, err := Listen(tc.addr)
		if tc.ok {
			require.NoError(t, err, tc.addr)
			require.NoError(t, ln.Close())
		} else {
			require.Error(t, err, tc.addr)
		}
	}
}

// TestConsole_Act: each button calls the daemon as it should, and sends
// the browser back saying what was done.
func TestConsole_Act(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		form     url.Values
		call     string
		location string
		code     int
	}{
		{url.Values{"op": {"run"}, "note": {"a.md"}}, "run a.md", base + "?msg=queued+run+a.md", 303},
		{url.Values{"op": {"run"}, "note": {"d/b.md"}, "back": {"note"}}, "run d/b.md", base + "note?path=d%2Fb.md&msg=queued+run+d%2Fb.md", 303},
		{url.Values{"op": {"retry"}, "note": {"a.md"}}, "run a.md", "", 303},
		{url.Values{"op": {"retry"}}, "retry 0001-01-01 00:00:00 +0000 UTC", "", 303},
		{url.Values{"op": {"pause"}, "note": {"a.md"}}, "pause a.md (paused from the console)", "", 303},
		{url.Values{"op": {"resume"}, "note": {"a.md"}}, "resume a.md", "", 303},
		{url.Values{"op": {"resume"}}, "resume ", "", 303},
		{url.Values{"op": {"run"}}, "", "", 400},
		{url.Values{"op": {"pause"}}, "", "", 400},
		{url.Values{"op": {"rm"}, "note": {"a.md"}}, "", "", 400},
		{url.Values{"op": {"run"}, "note": {"../x.md"}}, "", "", 400},
		{url.Values{"op": {"run"}, "note": {"/etc/x.md"}}, "", "", 400},
		{url.Values{"op": {"run"}, "note": {"a.tieoff.md"}}, "", "", 400},
		{url.Values{"op": {"run"}, "note": {".knot/x.md"}}, "", "", 400},
	} {
		before := len(f.b.Calls())
		w := f.post(t, base+"act", tc.form, orig)
		require.Equal(t, tc.code, w.Code, "%v: %s", tc.form, w.Body.String())
		calls := f.b.Calls()[before:]
		if tc.call == "" {
			require.Empty(t, calls, "%v", tc.form)
			continue
		}
		require.Equal(t, []string{tc.call}, calls, "%v", tc.form)
		if tc.location != "" {
			require.Equal(t, tc.location, w.Header().Get("Location"))
		}
	}
	// With no daemon, the page says so.
	f.b.err = control.ErrNoDaemon
	w := f.post(t, base+"act", url.Values{"op": {"run"}, "note": {"a.md"}}, orig)
	loc, err := url.Parse(w.Header().Get("Location"))
	require.NoError(t, err)
	require.Contains(t, loc.Query().Get("msg"), "no knotd is running")
}

// TestConsole_Pages: the overview lists the notes with their last runs and
// what the daemon does; a note's page renders its tie-off safely beside
// its runs; a run's page shows its events.
func TestConsole_Pages(t *testing.T) {
	f := newFixture(t)
	f.write(t, "a.md", "# A\n")
	f.write(t, "sub/b.md", "# B\n")
	f.write(t, "never.md", "# N\n")
	f.write(t, "ignored/x.md", "# X\n")
	f.write(t, ".gitignore", "ignored/\n")
	f.write(t, ".obsidian/y.md", "# Y\n")
	f.write(t, "drafts/z.md", "# Z\n")
	f.c.o.Ignore = []string{"drafts/"} // as configured
	ok, r := f.record(t, "a.md",
		transcript.UserMessage{Prompt: "the <prompt>"},
		transcript.AssistantMessage{Blocks: []transcript.Block{{Type: transcript.BlockText, Text: "reply <b>x</b>"}}},
		transcript.Finished{Outcome: "ok", ExitCode: 0, Usage: &transcript.Usage{InputTokens: 10, OutputTokens: 3, CostUSD: 0.0123}})
	require.NoError(t, r.Close())
	failed, r := f.record(t, "sub/b.md", transcript.Finished{Outcome: "failed", ExitCode: 3, Reason: "exit status 3",
		Usage: &transcript.Usage{InputTokens: 100, OutputTokens: 20}})
	require.NoError(t, r.Close())
	running, _ := f.record(t, "sub/b.md", transcript.AssistantMessage{Blocks: []transcript.Block{
		{Type: transcript.BlockThinking, Text: "thinking"}, {Type: transcript.BlockText, Text: "working on <it>"}}})
	f.b.status.Running = []control.Running{{Note: "sub/b.md", RunID: running, Agent: "claude", Event: "Modified", Elapsed: 3 * time.Second}}
	f.b.status.Queued = []control.Queued{{Note: "never.md", FiredBy: "user"}}
	f.b.status.Failures = []control.Failure{{Note: "sub/b.md", RunID: failed, Reason: "exit status 3"}}
	f.b.status.Paused = []control.Paused{{Note: "a.md", Why: "on holiday"}}
	f.b.status.Deferred = []control.Paused{{Note: "never.md", Why: "the vault's budget of $1.00 a day is spent"}}
	f.b.status.Today = control.Totals{Runs: 2, OK: 1, Failed: 1, InputTokens: 110, OutputTokens: 23, Metered: 1, CostUSD: 0.0123, Priced: 1}
	f.b.status.Schedules = []control.Schedule{{Note: "a.md", Schedule: "daily 07:00", Zone: "Europe/Paris", Next: time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)},
		{Note: "never.md", Problem: "knot_schedule: daily 25:00 <is> not a time"}}
	section, err := tieoff.Format(tieoff.Section{Event: strand.Modified, Strand: "a.md", Time: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC), RunID: ok,
		Body: "Some **bold** text, <script>alert(1)</script>, [a link](javascript:alert(2)) and <img src=x onerror=alert(3)>.\n"})
	require.NoError(t, err)
	asked, err := tieoff.Format(tieoff.Section{Event: strand.Modified, Strand: "a.md", Time: time.Date(2026, 11, 23, 10, 1, 0, 0, time.UTC),
		RunID: "01a221c7-0000-7000-8000-0000000000a1", Asked: true, Question: "3f9a2c1b", Call: strings.Repeat("a", 64), Body: "**claude asks to edit `a.md`**\n"})
	require.NoError(t, err)
	answered, err := tieoff.Format(tieoff.Section{Event: strand.Modified, Strand: "a.md", Time: time.Date(2026, 11, 23, 10, 2, 0, 0, time.UTC),
		RunID: "01a221c7-0000-7000-8000-0000000000a2", Question: "3f9a2c1b", Verdict: "approve", Body: "Approved.\n"})
	require.NoError(t, err)
	f.write(t, "a.tieoff.md", string(section)+"\n---\n\n"+string(asked)+"\n---\n\n"+string(answered))

	w := f.get(t, base)
	require.Equal(t, 200, w.Code)
	page := w.Body.String()
	for _, want := range []string{
		"knotd answers this vault", "pid 7",
		`href="` + base + `run/` + running + `"`, "3s", "working on &lt;it&gt;", // running, its output so far
		"never.md", "(user)", // waiting
		"exit status 3", "on holiday", // failures, paused
		"Waiting for the day's budget (1)", "budget of $1.00 a day is spent", // deferred
		"Schedules (2)", "daily 07:00 (Europe/Paris)", "next 2026-11-24 06:00 UTC", "cannot be used: knot_schedule: daily 25:00 &lt;is&gt; not a time", // schedules
		"2 runs, 1 ok, 1 failed; 110 tokens in, 23 out (reported by the CLIs of 1 run); $0.0123 reported by the CLIs of 1 run", // today
		`data-note="a.md"`, "$0.0123", // cost reported
		`data-note="sub/b.md"`, "in progress",
		`data-note="never.md"`, "never ran",
	} {
		require.Contains(t, page, want)
	}
	// No CLI reported tokens: unknown, not 0.
	f.b.status.Today = control.Totals{Runs: 1, OK: 1}
	unmetered := f.get(t, base).Body.String()
	require.Contains(t, unmetered, "1 run, 1 ok, 0 failed; tokens not reported")
	require.NotContains(t, unmetered, "0 tokens")
	require.NotContains(t, page, "ignored/x.md")
	require.NotContains(t, page, "y.md")
	require.NotContains(t, page, "z.md")
	// The notes with runs come first, newest run first.
	require.Less(t, strings.Index(page, `data-note="sub/b.md"`), strings.Index(page, `data-note="a.md"`))
	require.Less(t, strings.Index(page, `data-note="a.md"`), strings.Index(page, `data-note="never.md"`))

	w = f.get(t, base+"note?path=a.md")
	require.Equal(t, 200, w.Code)
	page = w.Body.String()
	require.Contains(t, page, "<strong>bold</strong>")
	require.Contains(t, page, `href="`+base+`run/`+ok+`"`)
	require.Contains(t, page, "$0.0123")
	require.Contains(t, page, `value="resume"`) // a.md is paused
	require.Contains(t, page, `class="section question"`, "a question section says so")
	require.Contains(t, page, " · <strong>question</strong>")
	require.Contains(t, page, " · <strong>approved</strong>", "and so does an answer")
	require.NotContains(t, page, "<script>alert")
	require.NotContains(t, page, "javascript:")
	require.NotContains(t, page, "onerror")

	w = f.get(t, base+"note/live?path=a.md")
	require.Equal(t, 200, w.Code)
	require.Contains(t, w.Body.String(), "<strong>bold</strong>")
	require.NotContains(t, w.Body.String(), "<html")

	w = f.get(t, base+"note?path=sub/b.md")
	require.Contains(t, w.Body.String(), "100 tokens in, 20 out") // tokens when no cost
	require.Contains(t, w.Body.String(), "no tie-off yet")

	for _, bad := range []string{"../a.md", "a.tieoff.md", "/etc/passwd", "a.txt", ""} {
		w = f.get(t, base+"note?path="+url.QueryEscape(bad))
		require.Equal(t, 400, w.Code, bad)
	}

	w = f.get(t, base+"run/"+ok)
	require.Equal(t, 200, w.Code)
	page = w.Body.String()
	require.Contains(t, page, "the &lt;prompt&gt;")
	require.Contains(t, page, "reply &lt;b&gt;x&lt;/b&gt;")
	require.Contains(t, page, `id="state" class="done"`)
	require.NotContains(t, page, "data-src")

	// A line half written (the recorder writes it meanwhile) is no error:
	// the live stream sends it once whole.
	tf, err := os.OpenFile(transcript.Path(f.runs, running), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = tf.WriteString(`{"seq":3,"run_id":"` + running + `","type":"message.as`)
	require.NoError(t, err)
	require.NoError(t, tf.Close())
	w = f.get(t, base+"run/"+running)
	require.NotContains(t, w.Body.String(), `class="err"`)
	require.Contains(t, w.Body.String(), `id="state" class="live"`)
	require.Contains(t, w.Body.String(), `data-src="`+base+`run/`+running+`/events"`)

	for _, bad := range []string{"nope", uuid.Must(uuid.NewV7()).String(), "..%2Fx"} {
		require.Equal(t, 404, f.get(t, base+"run/"+bad).Code, bad)
	}

	// With no daemon: the stored status, or what went wrong.
	f.b.err = control.ErrNoDaemon
	w = f.get(t, base+"activity")
	require.Contains(t, w.Body.String(), "no knotd is running")
}

// TestConsole_LiveRun: a run's events stream as they are written, and the
// stream ends once the run has.
func TestConsole_LiveRun(t *testing.T) {
	f := newFixture(t)
	id, r := f.record(t, "a.md", transcript.UserMessage{Prompt: "p"})
	origin, _ := serve(t, f)

	req, err := http.NewRequest(http.MethodGet, origin+base+"run/"+id+"/events", nil)
	require.NoError(t, err)
	req.Header.Set("Last-Event-ID", "1") // the page shows run.started
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))

	type sse struct{ event, id, data string }
	got := make(chan sse, 16)
	go func() {
		defer close(got)
		sc := bufio.NewScanner(resp.Body)
		var cur sse
		for sc.Scan() {
			l := sc.Text()
			switch {
			case l == "":
				if cur.event != "" {
					got <- cur
				}
				cur = sse{}
			case strings.HasPrefix(l, "event: "):
				cur.event = l[7:]
			case strings.HasPrefix(l, "id: "):
				cur.id = l[4:]
			case strings.HasPrefix(l, "data: "):
				cur.data += l[6:] + "\n"
			}
		}
	}()
	next := func() sse {
		select {
		case e, ok := <-got:
			require.True(t, ok, "the stream ended early")
			return e
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10s")
			return sse{}
		}
	}
	e := next()
	require.Equal(t, "ev", e.event)
	require.Equal(t, "2", e.id)
	require.Contains(t, e.data, "message.user")

	_, err = r.Record(transcript.AssistantMessage{Blocks: []transcript.Block{{Type: transcript.BlockText, Text: "live <output>"}}})
	require.NoError(t, err)
	e = next()
	require.Equal(t, "3", e.id)
	require.Contains(t, e.data, "live &lt;output&gt;")

	_, err = r.Record(transcript.Finished{Outcome: "ok"})
	require.NoError(t, err)
	_, err = r.Record(transcript.TieOff{Path: "a.tieoff.md"})
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.Contains(t, next().data, "run.finished")
	require.Contains(t, next().data, "tieoff.appended")
	e = next()
	require.Equal(t, "end", e.event)
	require.Equal(t, "ok\n", e.data)
	_, open := <-got
	require.False(t, open, "the stream goes on after its end")
}

// readSSE sends the events of an event stream to a channel, closed when
// the stream ends.
func readSSE(t *testing.T, resp *http.Response) <-chan [2]string {
	t.Helper()
	got := make(chan [2]string, 64)
	go func() {
		defer close(got)
		sc := bufio.NewScanner(resp.Body)
		var event, data string
		for sc.Scan() {
			l := sc.Text()
			switch {
			case l == "":
				if event != "" {
					got <- [2]string{event, data}
				}
				event, data = "", ""
			case strings.HasPrefix(l, "event: "):
				event = l[7:]
			case strings.HasPrefix(l, "data: "):
				data += l[6:] + "\n"
			}
		}
	}()
	return got
}

// serve serves f's console on a free loopback port until the returned
// stop is called, and returns its origin. stop returns Serve's error.
func serve(t *testing.T, f *fixture) (origin string, stop func() error) {
	t.Helper()
	ln, err := Listen("127.0.0.1:0")
	require.NoError(t, err)
	f.c.o.Addr = ln.Addr().String() // before serving: nothing reads it yet
	f.c.orig = "http://" + f.c.o.Addr
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- f.c.Serve(ctx, ln) }()
	var once sync.Once
	var serr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case serr = <-served:
			case <-time.After(10 * time.Second):
				t.Fatal("the console did not stop within 10s")
			}
		})
		return serr
	}
	t.Cleanup(func() { _ = stop() })
	return f.c.orig, stop
}

// TestConsole_StreamEnds: a live stream ends when the console stops, and
// when the daemon no longer runs a run that never finished.
func TestConsole_StreamEnds(t *testing.T) {
	f := newFixture(t)
	id, _ := f.record(t, "a.md") // never finishes
	f.b.status.Running = []control.Running{{Note: "a.md", RunID: id}}
	origin, stop := serve(t, f)

	open := func() <-chan [2]string {
		resp, err := http.Get(origin + base + "run/" + id + "/events")
		require.NoError(t, err)
		t.Cleanup(func() { _ = resp.Body.Close() })
		require.Equal(t, 200, resp.StatusCode)
		return readSSE(t, resp)
	}
	next := func(c <-chan [2]string) ([2]string, bool) {
		select {
		case e, ok := <-c:
			return e, ok
		case <-time.After(10 * time.Second):
			t.Fatal("the stream said nothing within 10s")
			return [2]string{}, false
		}
	}

	// The daemon forgets the run (it died): the stream says so and ends.
	c := open()
	e, _ := next(c)
	require.Equal(t, "ev", e[0]) // run.started
	f.b.mu.Lock()
	f.b.status.Running = nil
	f.b.mu.Unlock()
	e, _ = next(c)
	require.Equal(t, "end", e[0])
	require.Contains(t, e[1], "no longer running")
	_, ok := next(c)
	require.False(t, ok)

	// The console stops while a stream is open: the stream ends, and
	// Serve returns.
	f.b.mu.Lock()
	f.b.status.Running = []control.Running{{Note: "a.md", RunID: id}}
	f.b.mu.Unlock()
	c = open()
	e, _ = next(c)
	require.Equal(t, "ev", e[0])
	require.NoError(t, stop())
	for ok := true; ok; {
		_, ok = next(c)
	}
}

// TestConsole_OffersWhatCanWork: the page offers Run and Pause only on
// notes knotd would run (not on a deleted note, nor on one the rules keep
// from every agent, which says why), Resume on a paused one whatever
// became of it, and Retry only on failures a retry can help (the others
// say why not); a button's answer says what the daemon did, or why not.
func TestConsole_OffersWhatCanWork(t *testing.T) {
	f := newFixture(t)
	f.c.o.Off = func(rel string) string {
		if strings.HasPrefix(rel, "private/") {
			return `rule path "private/" keeps it from every agent`
		}
		return ""
	}
	f.write(t, "a.md", "# A\n")
	f.write(t, "private/p.md", "# P\n")
	for _, n := range []string{"gone.md", "paused-gone.md"} {
		_, r := f.record(t, n, transcript.Finished{Outcome: "ok"})
		require.NoError(t, r.Close())
	}
	fixable, r := f.record(t, "a.md", transcript.Finished{Outcome: "failed", ExitCode: 3, Reason: "exit status 3"})
	require.NoError(t, r.Close())
	f.b.status.Paused = []control.Paused{{Note: "paused-gone.md", Why: "on holiday"}}
	f.b.status.Failures = []control.Failure{{Note: "a.md", RunID: fixable, Reason: "exit status 3"}}

	row := func(page, note string) string {
		i := strings.Index(page, `<tr data-note="`+note+`">`)
		require.GreaterOrEqual(t, i, 0, "no row for %s", note)
		j := strings.Index(page[i:], "</tr>")
		return page[i : i+j]
	}
	button := func(op string) string { return `name="op" value="` + op + `"` }
	for _, tc := range []struct {
		note    string
		offered []string
		not     []string
		says    string
	}{
		{"a.md", []string{"run", "pause"}, []string{"resume"}, ""},
		{"gone.md", nil, []string{"run", "pause", "resume"}, "(deleted)"},
		{"paused-gone.md", []string{"resume"}, []string{"run", "pause"}, "(deleted)"},
		{"private/p.md", nil, []string{"run", "pause", "resume"}, `kept from every agent: rule path &#34;private/&#34;`},
	} {
		page := f.get(t, base).Body.String()
		r := row(page, tc.note)
		note := f.get(t, base+"note?path="+url.QueryEscape(tc.note)).Body.String()
		for _, op := range tc.offered {
			require.Contains(t, r, button(op), "%s: the overview offers no %s", tc.note, op)
			require.Contains(t, note, button(op), "%s: its page offers no %s", tc.note, op)
		}
		for _, op := range tc.not {
			require.NotContains(t, r, button(op), "%s: the overview offers %s", tc.note, op)
			require.NotContains(t, note, button(op), "%s: its page offers %s", tc.note, op)
		}
		require.Contains(t, r, tc.says)
	}

	// Retry: offered on a failure a retry can help, and Retry all while
	// there is one; a failure no retry can fix says why instead.
	page := f.get(t, base).Body.String()
	require.Contains(t, page, "Retry all")
	require.Contains(t, page, `name="note" value="a.md"><button>Retry</button>`)
	f.b.status.Failures[0].NoRetry = "a retry would fail the same way: its frontmatter cannot be read"
	page = f.get(t, base).Body.String()
	require.NotContains(t, page, "Retry all")
	require.NotContains(t, page, "<button>Retry</button>")
	require.Contains(t, page, "its frontmatter cannot be read")

	// A button's answer is the daemon's, refusals and outcomes included.
	for _, tc := range []struct {
		res  control.Result
		want string
	}{
		{control.Result{Refused: []control.Refusal{{Note: "missing.md", Why: "no such note"}}}, "not queued missing.md: no such note"},
		{control.Result{Done: []string{"a.md"}, Did: map[string]string{"a.md": "queued behind its run in progress"}}, "a.md: queued behind its run in progress"},
		{control.Result{Done: []string{"a.md"}}, "queued a.md"},
	} {
		f.b.result = &tc.res
		w := f.post(t, base+"act", url.Values{"op": {"run"}, "note": {"a.md"}}, orig)
		loc, err := url.Parse(w.Header().Get("Location"))
		require.NoError(t, err)
		require.Equal(t, tc.want, loc.Query().Get("msg"))
	}
}
