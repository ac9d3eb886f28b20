package notify

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// post is one request the ntfy stand-in received.
type post struct {
	method, path, body          string
	title, prio, tags, auth, ct string
}

// ntfyStandIn is an HTTP server on loopback that records what it is sent
// and answers status.
func ntfyStandIn(t *testing.T, status int) (*httptest.Server, func() []post) {
	t.Helper()
	var mu sync.Mutex
	var got []post
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read the body: %v", err)
		}
		mu.Lock()
		got = append(got, post{method: r.Method, path: r.URL.Path, body: string(b), title: r.Header.Get("Title"),
			prio: r.Header.Get("Priority"), tags: r.Header.Get("Tags"), auth: r.Header.Get("Authorization"), ct: r.Header.Get("Content-Type")})
		mu.Unlock()
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"error":"topic is forbidden"}`)
	}))
	t.Cleanup(srv.Close)
	require.True(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"), srv.URL)
	return srv, func() []post {
		mu.Lock()
		defer mu.Unlock()
		return append([]post(nil), got...)
	}
}

// TestURL_NtfyStyleOncePerEvent posts each event once, ntfy's way: the
// message as the body, the title, priority and tags as headers, the token
// as a bearer token; a title that is not ASCII as RFC 2047 words.
func TestURL_NtfyStyleOncePerEvent(t *testing.T) {
	srv, got := ntfyStandIn(t, http.StatusOK)
	var log logBuf
	n := start(t, Options{Sinks: []Sink{URL{URL: srv.URL + "/knotd-ada", Token: "tk_secret"}}, Log: log.logger()})
	evs := events(time.Now())
	evs[2].Title = "knotd paused Überlegungen.md"
	for _, e := range append(evs, evs...) {
		n.Notify(e)
	}
	flush(t, n)
	p := got()
	require.Len(t, p, 3, "once per event")
	want := []struct{ prio, tags string }{{"4", "question,knotd"}, {"3", "x,knotd"}, {"3", "pause_button,knotd"}}
	for i, e := range evs {
		require.Equal(t, http.MethodPost, p[i].method)
		require.Equal(t, "/knotd-ada", p[i].path)
		require.Equal(t, e.Message, p[i].body)
		require.Equal(t, want[i].prio, p[i].prio)
		require.Equal(t, want[i].tags, p[i].tags)
		require.Equal(t, "Bearer tk_secret", p[i].auth)
		require.Equal(t, "text/plain; charset=utf-8", p[i].ct)
	}
	require.Equal(t, evs[0].Title, p[0].title)
	require.Equal(t, "=?utf-8?q?knotd_paused_=C3=9Cberlegungen.md?=", p[2].title)
	require.Contains(t, p[0].body, "knot_answer: approve 3f9a2c1b")
	require.Empty(t, log.String())
}

// TestURL_ServerFailsLogged: a server that refuses is logged with its
// answer (and never the token), each event tried once, and the other
// sinks still get every event.
func TestURL_ServerFailsLogged(t *testing.T) {
	srv, got := ntfyStandIn(t, http.StatusForbidden)
	var log logBuf
	rec := &recorder{}
	n := start(t, Options{Sinks: []Sink{URL{URL: srv.URL + "/t?auth=x", Token: "tk_secret"}, rec}, Log: log.logger()})
	for _, e := range events(time.Now()) {
		n.Notify(e)
	}
	flush(t, n)
	require.Len(t, got(), 3)
	require.Len(t, rec.got(), 3)
	l := log.String()
	require.Equal(t, 3, strings.Count(l, "cannot notify"), l)
	require.True(t, contains(l, "sink=url", "403 Forbidden", "topic is forbidden", srv.URL+"/t"), l)
	require.NotContains(t, l, "tk_secret")
	require.NotContains(t, l, "auth=x")
}

// TestURL_NoRedirect: the event goes to the address written, or nowhere.
func TestURL_NoRedirect(t *testing.T) {
	elsewhere, got := ntfyStandIn(t, http.StatusOK)
	redirect := httptest.NewServer(http.RedirectHandler(elsewhere.URL+"/stolen", http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	var log logBuf
	n := start(t, Options{Sinks: []Sink{URL{URL: redirect.URL}}, Log: log.logger()})
	n.Notify(events(time.Now())[0])
	flush(t, n)
	require.Empty(t, got())
	require.Contains(t, log.String(), "307 Temporary Redirect")
}
