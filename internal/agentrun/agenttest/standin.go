package agenttest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// maxBody bounds the request bodies the stand-ins read (Claude Code's are
// about 50 KB for a short conversation).
const maxBody = 64 << 20

// StandIn is the skeleton the API stand-ins of the agents' test packages
// (claudetest.Server, codextest.OpenAI, geminitest.GeminiServer) share: a
// loopback httptest.Server that reads each request, records it with the
// status it is answered with, and answers it with the status the test
// forced, an error for a body it cannot read or parse, the API's own
// answer, or a 404. R is the API's record of a request; api knows the rest.
// Its methods are safe for concurrent use.
type StandIn[R any] struct {
	// URL is the server's base URL, http://127.0.0.1:PORT.
	URL string

	tb        testing.TB
	api       API[R]
	srv       *httptest.Server
	closeOnce sync.Once

	mu     sync.Mutex
	reqs   []R
	status int
	times  int // answers left with status; <0: all of them
	nextID int
}

// API is the part of a stand-in that knows one API: its routes, its record
// of a request, and how it encodes answers and errors.
type API[R any] interface {
	// APIName names the API in the test's log: "Anthropic".
	APIName() string
	// Record returns the record of r, whose body is body, with Status 0, and
	// whether r is one of the API's routes; when parse is set (the body was
	// read whole) it also parses the body of a route that has one, and
	// returns the error.
	Record(r *http.Request, body []byte, parse bool) (rec R, routed bool, err error)
	// SetRecordStatus sets the status rec was answered with.
	SetRecordStatus(rec *R, status int)
	// Respond returns the 200 answer to a routed request; n numbers the
	// stand-in's requests from 1.
	Respond(rec *R, n int) func(http.ResponseWriter) error
	// WriteError answers with status and the API's error object saying msg.
	WriteError(w http.ResponseWriter, status int, msg string) error
	// WriteForced answers with the status the test forced (Force) and the
	// API's error object for it.
	WriteForced(w http.ResponseWriter, status int) error
}

// NewStandIn starts a stand-in for api on a loopback port. It is closed
// when tb's test ends (t.Cleanup); Close may also be called earlier.
func NewStandIn[R any](tb testing.TB, api API[R]) *StandIn[R] {
	tb.Helper()
	s := &StandIn[R]{tb: tb, api: api}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	tb.Cleanup(s.Close)
	return s
}

// Close stops the server: it closes the listener and idle connections and
// waits for the requests being answered. It may be called more than once.
func (s *StandIn[R]) Close() {
	s.closeOnce.Do(s.srv.Close)
}

// Requests returns every request received so far, in arrival order. A
// request is recorded before its answer is written, so a client that has
// read an answer finds its request here.
func (s *StandIn[R]) Requests() []R {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// Force makes the server answer the next n requests (n < 0: every later
// request), whatever their path, with status code and the API's error
// object. code 0 or n 0 restores normal answers.
func (s *StandIn[R]) Force(code, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.times = code, n
	if code == 0 || n == 0 {
		s.status, s.times = 0, 0
	}
}

// serve records r, then answers it.
func (s *StandIn[R]) serve(w http.ResponseWriter, r *http.Request) {
	body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	req, routed, parseErr := s.api.Record(r, body, readErr == nil)

	s.mu.Lock()
	forced := s.status
	if s.times > 0 {
		s.times--
		if s.times == 0 {
			s.status = 0
		}
	}
	s.nextID++
	n := s.nextID
	s.mu.Unlock()

	// Decide the answer, record the request with its status, then write.
	var answer func(http.ResponseWriter) error
	failWith := func(status int, err error) {
		s.api.SetRecordStatus(&req, status)
		answer = func(w http.ResponseWriter) error { return s.api.WriteError(w, status, err.Error()) }
	}
	var tooLarge *http.MaxBytesError
	switch {
	case forced != 0:
		s.api.SetRecordStatus(&req, forced)
		answer = func(w http.ResponseWriter) error { return s.api.WriteForced(w, forced) }
	case errors.As(readErr, &tooLarge):
		failWith(http.StatusRequestEntityTooLarge, readErr)
	case readErr != nil:
		failWith(http.StatusBadRequest, readErr)
	case parseErr != nil:
		failWith(http.StatusBadRequest, parseErr)
	case routed:
		s.api.SetRecordStatus(&req, http.StatusOK)
		answer = s.api.Respond(&req, n)
	default:
		s.tb.Logf("agenttest: %s stand-in: no route for %s %s: answered 404", s.api.APIName(), r.Method, r.URL)
		failWith(http.StatusNotFound, fmt.Errorf("agenttest: no route for %s %s", r.Method, r.URL.Path))
	}

	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()

	if err := answer(w); err != nil {
		// The client went away mid-answer; nothing else to tell it.
		s.tb.Logf("agenttest: %s stand-in: answer %s %s: %v", s.api.APIName(), r.Method, r.URL, err)
	}
}

// WriteJSON answers with status and v encoded as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("agenttest: encode reply: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if _, err := w.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("agenttest: write reply: %w", err)
	}
	return nil
}
