// Package agenttest helps tests run real agent CLIs against loopback
// stand-ins for the services they call, in the spirit of net/http/httptest.
//
// Server is a stand-in for the Anthropic Messages API, started on 127.0.0.1
// by NewAnthropic. It records every request and answers the way the stand-in
// that recorded knotd's Claude Code fixtures did
// (agentrun/testdata/claude/RECORDING.md, copied from the recording):
//
//   - POST /v1/messages with "stream": true: a text/event-stream of
//     message_start, content_block_start, one content_block_delta
//     (text_delta), content_block_stop, message_delta (stop_reason
//     end_turn) and message_stop;
//   - POST /v1/messages without it: the same reply as one JSON message;
//   - POST /v1/messages/count_tokens: {"input_tokens": 10};
//   - GET and HEAD: {};
//   - anything else: a 404 with an API error object, logged to the test.
//
// The reply text is "MOCK REPLY (user messages seen: N)", N counting the
// user messages of the request, unless the test sets a ReplyFunc, or with
// SetAnswer a Reply that may call the CLI's tools (see CallTool); SetStatus
// makes it answer every request with an error status instead (Claude Code
// retries a 401 forever: see ClaudeCLI for running the real CLI).
package agenttest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// maxBody bounds the request bodies the stand-in reads (Claude Code's are
// about 50 KB for a short conversation).
const maxBody = 64 << 20

// ReplyFunc returns the text the stand-in answers a Messages API request with.
// It is called from the server's handler goroutines, possibly concurrently.
type ReplyFunc func(Request) string

// DefaultReply is the stand-in's default ReplyFunc:
// "MOCK REPLY (user messages seen: N)", N counting the user messages of r.
func DefaultReply(r Request) string {
	return fmt.Sprintf("MOCK REPLY (user messages seen: %d)", len(r.UserMessages()))
}

// Server is a loopback stand-in for the Anthropic Messages API. Its methods
// are safe for concurrent use.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:PORT, the value for
	// ANTHROPIC_BASE_URL.
	URL string

	tb        testing.TB
	srv       *httptest.Server
	closeOnce sync.Once

	mu     sync.Mutex
	reqs   []Request
	answer func(Request) Reply
	status int
	nextID int
}

// NewAnthropic starts a Server on a loopback port. It is closed when tb's
// test ends (t.Cleanup); Close may also be called earlier.
func NewAnthropic(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{tb: tb}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	tb.Cleanup(s.Close)
	return s
}

// Close stops the server: it closes the listener and idle connections and
// waits for the requests being answered. It may be called more than once.
func (s *Server) Close() {
	s.closeOnce.Do(s.srv.Close)
}

// SetReply makes the server answer later Messages API requests with
// reply's text; nil restores DefaultReply.
func (s *Server) SetReply(reply ReplyFunc) {
	if reply == nil {
		s.SetAnswer(nil)
		return
	}
	s.SetAnswer(func(r Request) Reply { return Reply{Text: reply(r)} })
}

// SetAnswer makes the server answer later Messages API requests with
// answer's Reply, which may call tools: each call becomes a tool_use
// content block (with an id "toolu_…" the stand-in makes up when the call
// has none) and the message's stop reason "tool_use". nil restores
// DefaultReply. answer is called from the server's handler goroutines,
// possibly concurrently.
func (s *Server) SetAnswer(answer func(Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answer = answer
}

// SetStatus makes the server answer every later request, whatever its path,
// with the HTTP status code and a Messages API error object (for example
// http.StatusUnauthorized). 0 restores normal answers.
func (s *Server) SetStatus(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = code
}

// Requests returns every request received so far, in arrival order. A
// request is recorded before its answer is written, so a client that has
// read an answer finds its request here.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// MessageRequests returns the POST /v1/messages requests received so far
// (the model calls, streamed or not), in arrival order.
func (s *Server) MessageRequests() []Request {
	var calls []Request
	for _, r := range s.Requests() {
		if r.Method == http.MethodPost && r.Path == "/v1/messages" {
			calls = append(calls, r)
		}
	}
	return calls
}

// serve records r, then answers it.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	req := Request{
		Method: r.Method,
		Path:   r.URL.Path,
		Query:  r.URL.RawQuery,
		Header: r.Header.Clone(),
		Body:   body,
	}
	messages := r.Method == http.MethodPost && r.URL.Path == "/v1/messages"
	counting := r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens"

	var parseErr error
	if (messages || counting) && readErr == nil {
		parseErr = req.parseBody(body)
	}

	s.mu.Lock()
	forced, answerFn := s.status, s.answer
	s.nextID++
	n := s.nextID
	s.mu.Unlock()
	id := fmt.Sprintf("msg_%024x", n)
	if answerFn == nil {
		answerFn = func(r Request) Reply { return Reply{Text: DefaultReply(r)} }
	}

	// Decide the answer, record the request with its status, then write.
	var answer func() error
	var tooLarge *http.MaxBytesError
	switch {
	case forced != 0:
		req.Status = forced
		answer = func() error {
			return writeError(w, forced, fmt.Sprintf("agenttest: status %d set by the test", forced))
		}
	case errors.As(readErr, &tooLarge):
		req.Status = http.StatusRequestEntityTooLarge
		answer = func() error { return writeError(w, req.Status, readErr.Error()) }
	case readErr != nil:
		req.Status = http.StatusBadRequest
		answer = func() error { return writeError(w, req.Status, readErr.Error()) }
	case parseErr != nil:
		req.Status = http.StatusBadRequest
		answer = func() error { return writeError(w, req.Status, parseErr.Error()) }
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		req.Status = http.StatusOK
		answer = func() error { return writeJSON(w, http.StatusOK, struct{}{}) }
	case counting:
		req.Status = http.StatusOK
		answer = func() error {
			return writeJSON(w, http.StatusOK, map[string]int{"input_tokens": replyInputTokens})
		}
	case messages:
		req.Status = http.StatusOK
		reply := answerFn(req)
		reply.ToolCalls = slices.Clone(reply.ToolCalls)
		for i := range reply.ToolCalls {
			if reply.ToolCalls[i].ID == "" {
				reply.ToolCalls[i].ID = fmt.Sprintf("toolu_%020x%02x", n, i)
			}
		}
		if req.Stream {
			answer = func() error { return writeStream(w, id, req.Model, reply) }
		} else {
			answer = func() error { return writeMessage(w, id, req.Model, reply) }
		}
	default:
		req.Status = http.StatusNotFound
		s.tb.Logf("agenttest: Anthropic stand-in: no route for %s %s: answered 404", r.Method, r.URL)
		answer = func() error {
			return writeError(w, http.StatusNotFound, fmt.Sprintf("agenttest: no route for %s %s", r.Method, r.URL.Path))
		}
	}

	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()

	if err := answer(); err != nil {
		// The client went away mid-answer; nothing else to tell it.
		s.tb.Logf("agenttest: Anthropic stand-in: answer %s %s: %v", r.Method, r.URL, err)
	}
}
