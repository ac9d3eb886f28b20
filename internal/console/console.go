// Package console is knotd's live console: a local web page that shows a
// vault's notes with their last run, outcome and cost, what the running
// knotd is doing (runs in progress with their output as it comes, the
// queue, failures, paused notes), a note's tie-off rendered as HTML beside
// its run transcripts, buttons to run, retry, pause and resume notes, and
// the questions agents asked (permissions: ask) with buttons to approve or
// deny each.
//
// The console is its own process (knotd console). It reads the vault, never
// writing to it, and steers the daemon only through a control.Backend (the
// daemon's control socket). It listens on a loopback address only, and is
// guarded against the other users of the machine and against other web
// pages:
//
//   - every request must carry an unguessable token (256 bits from
//     crypto/rand) as the first element of its path, /t/<token>/…; it is
//     compared in constant time, and a request without it learns nothing
//     (404);
//   - a request whose Host is not the loopback address and port the
//     console listens on is refused (DNS rebinding: a foreign name that
//     resolves to 127.0.0.1 carries that name as its Host);
//   - a state-changing request (POST) must carry an Origin that is exactly
//     the console's own; other methods than GET, HEAD and POST are refused;
//   - every answer forbids caching, framing and referrers to other sites, and its
//     Content-Security-Policy allows only the console's own scripts,
//     styles and images (no inline script, nothing from elsewhere).
package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/knotd/knotd/internal/control"
)

// Options are what a Console is built from.
type Options struct {
	// Root is the vault's directory (absolute, symbolic links resolved).
	Root string
	// Backend is the running daemon (a control.Client on its socket). Its
	// errors wrapping control.ErrNoDaemon mean that no knotd runs.
	Backend control.Backend
	// Stored, when set, is the status to show when no daemon runs (what
	// knotd's state store says); ok false when it has none.
	Stored func() (st control.Status, ok bool, err error)
	// RunsDir is the folder of the vault's run transcripts.
	RunsDir string
	// ObsidianDir and Ignore are the configured obsidian_dir and ignore
	// patterns: the notes list leaves out what knotd ignores.
	ObsidianDir string
	Ignore      []string
	// Off, when set, says why the rules keep the note at rel from every
	// agent ("" when they do not): the console offers it no Run or Pause.
	Off func(rel string) string
	// Addr is the host:port the console is reached at: the Host every
	// request must carry, and the origin of its pages.
	Addr string
	// Token is the secret every request must carry; empty: New makes one.
	Token string
	// Log receives what goes wrong while serving (nil: discarded).
	Log *slog.Logger
	// Poll is how often a live run is looked at for new output, and a
	// page's live parts are refreshed (default 250ms for runs; pages
	// refresh every 2s).
	Poll time.Duration
}

// Console is the console's http.Handler.
type Console struct {
	o     Options
	vault *os.Root
	runs  *runIndex
	pages *pages
	base  string // "/t/<token>/"
	orig  string // "http://<addr>"
	mux   *http.ServeMux
}

// NewToken returns a new random token: 256 bits, base64url.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("console: make a token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// New returns the console of a vault. Close it when done: it holds the
// vault's folder open.
func New(o Options) (*Console, error) {
	if o.Backend == nil || o.Root == "" || o.Addr == "" {
		return nil, errors.New("console: Root, Backend and Addr are required")
	}
	if o.Token == "" {
		t, err := NewToken()
		if err != nil {
			return nil, err
		}
		o.Token = t
	}
	if len(o.Token) < 32 || strings.ContainsAny(o.Token, "/?#%") {
		return nil, errors.New("console: the token must be at least 32 URL-safe characters")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Poll <= 0 {
		o.Poll = 250 * time.Millisecond
	}
	root, err := os.OpenRoot(o.Root)
	if err != nil {
		return nil, fmt.Errorf("console: open the vault: %w", err)
	}
	p, err := newPages()
	if err != nil {
		_ = root.Close() // nothing was read: nothing to lose
		return nil, err
	}
	c := &Console{
		o:     o,
		vault: root,
		runs:  &runIndex{dir: o.RunsDir},
		pages: p,
		base:  "/t/" + o.Token + "/",
		orig:  "http://" + o.Addr,
	}
	c.routes()
	return c, nil
}

// Close releases the vault's folder.
func (c *Console) Close() error {
	if err := c.vault.Close(); err != nil {
		return fmt.Errorf("console: %w", err)
	}
	return nil
}

// URL is the address to open: it carries the token.
func (c *Console) URL() string { return c.orig + c.base }

// Listen listens on addr, which must be a loopback IP address and a port
// (127.0.0.1:0 picks a free port); names, even localhost, are refused, so
// that nothing but the loopback interface is ever bound.
func Listen(addr string) (net.Listener, error) {
	if err := CheckAddr(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	return ln, nil
}

// CheckAddr checks that addr is a loopback IP address and a port.
func CheckAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("console: address %q: %w", addr, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("console: address %q: the console listens on a loopback address only (such as 127.0.0.1:0)", addr)
	}
	return nil
}

// Serve serves the console on ln until ctx ends, then stops: the live
// streams end (their contexts derive from ctx) and the server shuts down,
// waiting a few seconds at most for answers under way.
func (c *Console) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           c,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(c.o.Log.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("console: %w", err)
	case <-ctx.Done():
	}
	stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(stop)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("console: stop: %w", err)
	}
	return nil
}

// ServeHTTP checks the guards, then serves the request.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with the console's own forms, which the Origin check
	// must refuse. A token URL is still never sent to another site.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	if status, why := c.refuse(r); status != 0 {
		http.Error(w, why, status)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// refuse says why a request is refused, 0 when it is not.
func (c *Console) refuse(r *http.Request) (int, string) {
	if r.Host != c.o.Addr {
		return http.StatusMisdirectedRequest, "this console answers only at " + c.orig
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/t/")
	tok, _, _ := strings.Cut(rest, "/")
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(c.o.Token)) != 1 {
		return http.StatusNotFound, "404 page not found"
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodPost:
		if r.Header.Get("Origin") != c.orig {
			return http.StatusForbidden, "a change must come from the console's own page"
		}
		if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" {
			return http.StatusForbidden, "a change must come from the console's own page"
		}
	default:
		return http.StatusMethodNotAllowed, "method not allowed"
	}
	return 0, ""
}
