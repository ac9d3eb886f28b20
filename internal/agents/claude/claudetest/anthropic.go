// Package claudetest helps tests run the real Claude Code CLI (ClaudeCLI,
// Server.ClaudeEnv) against a loopback stand-in for the Anthropic Messages
// API, in the spirit of net/http/httptest.
//
// Server is a stand-in for the Anthropic Messages API, started on 127.0.0.1
// by NewAnthropic. It records every request and answers the way the stand-in
// that recorded knotd's Claude Code fixtures did
// (agents/claude/testdata/recorded/RECORDING.md, copied from the recording):
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
// SetAnswer an agenttest.Reply that may call the CLI's tools (see
// agenttest.CallTool); SetStatus
// makes it answer every request with an error status instead (Claude Code
// retries a 401 forever: see ClaudeCLI for running the real CLI).
package claudetest

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
)

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

	*agenttest.StandIn[Request]

	mu     sync.Mutex
	answer func(Request) agenttest.Reply
}

// NewAnthropic starts a Server on a loopback port. It is closed when tb's
// test ends (t.Cleanup); Close may also be called earlier.
func NewAnthropic(tb testing.TB) *Server {
	tb.Helper()
	s := &Server{}
	s.StandIn = agenttest.NewStandIn[Request](tb, (*messagesAPI)(s))
	s.URL = s.StandIn.URL
	return s
}

// SetReply makes the server answer later Messages API requests with
// reply's text; nil restores DefaultReply.
func (s *Server) SetReply(reply ReplyFunc) {
	if reply == nil {
		s.SetAnswer(nil)
		return
	}
	s.SetAnswer(func(r Request) agenttest.Reply { return agenttest.Reply{Text: reply(r)} })
}

// SetAnswer makes the server answer later Messages API requests with
// answer's Reply, which may call tools: each call becomes a tool_use
// content block (with an id "toolu_…" the stand-in makes up when the call
// has none) and the message's stop reason "tool_use". nil restores
// DefaultReply. answer is called from the server's handler goroutines,
// possibly concurrently.
func (s *Server) SetAnswer(answer func(Request) agenttest.Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answer = answer
}

// SetStatus makes the server answer every later request, whatever its path,
// with the HTTP status code and a Messages API error object (for example
// http.StatusUnauthorized). 0 restores normal answers.
func (s *Server) SetStatus(code int) {
	s.Force(code, -1)
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

// ConversationPrompts returns the UserPrompts of each model call so far
// that carries a user prompt, in arrival order, leaving out a CLI's side
// calls for a session title (Claude Code's and OpenCode's): the
// conversation's calls.
func (s *Server) ConversationPrompts() [][]string {
	var out [][]string
	for _, r := range s.MessageRequests() {
		if p := r.UserPrompts(); len(p) > 0 && !isTitleCall(p) {
			out = append(out, p)
		}
	}
	return out
}

// isTitleCall reports whether a model call whose user prompts are prompts
// is a CLI's side call for a session title (Claude Code's and OpenCode's),
// not the conversation.
func isTitleCall(prompts []string) bool {
	last := prompts[len(prompts)-1]
	return strings.HasPrefix(last, "<session>\n") || strings.HasPrefix(last, "Generate a title for this conversation:")
}

// ToolResults returns the tool results of every model call so far, in
// order: what the CLI sent back for the model's tool calls.
func (s *Server) ToolResults() []agenttest.ToolResult {
	var out []agenttest.ToolResult
	for _, r := range s.MessageRequests() {
		out = append(out, r.ToolResults()...)
	}
	return out
}

// messagesAPI is the Server seen as the agenttest.API it serves.
type messagesAPI Server

func (s *messagesAPI) APIName() string { return "Anthropic" }

func (s *messagesAPI) SetRecordStatus(r *Request, status int) { r.Status = status }

// Record records r; its routes are POST /v1/messages and
// /v1/messages/count_tokens, whose bodies it parses, and GET and HEAD.
func (s *messagesAPI) Record(r *http.Request, body []byte, parse bool) (Request, bool, error) {
	req := Request{
		Method: r.Method,
		Path:   r.URL.Path,
		Query:  r.URL.RawQuery,
		Header: r.Header.Clone(),
		Body:   body,
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return req, true, nil
	}
	if r.Method != http.MethodPost || (r.URL.Path != "/v1/messages" && r.URL.Path != "/v1/messages/count_tokens") {
		return req, false, nil
	}
	var err error
	if parse {
		err = req.parseBody(body)
	}
	return req, true, err
}

func (s *messagesAPI) Respond(req *Request, n int) func(http.ResponseWriter) error {
	switch {
	case req.Method == http.MethodGet || req.Method == http.MethodHead:
		return func(w http.ResponseWriter) error { return agenttest.WriteJSON(w, http.StatusOK, struct{}{}) }
	case req.Path == "/v1/messages/count_tokens":
		return func(w http.ResponseWriter) error {
			return agenttest.WriteJSON(w, http.StatusOK, map[string]int{"input_tokens": replyInputTokens})
		}
	}
	s.mu.Lock()
	answerFn := s.answer
	s.mu.Unlock()
	if answerFn == nil {
		answerFn = func(r Request) agenttest.Reply { return agenttest.Reply{Text: DefaultReply(r)} }
	}
	id := fmt.Sprintf("msg_%024x", n)
	reply := answerFn(*req).WithCallIDs("toolu", n)
	model, stream := req.Model, req.Stream
	if stream {
		return func(w http.ResponseWriter) error { return writeStream(w, id, model, reply) }
	}
	return func(w http.ResponseWriter) error { return writeMessage(w, id, model, reply) }
}

func (s *messagesAPI) WriteError(w http.ResponseWriter, status int, msg string) error {
	return writeError(w, status, msg)
}

func (s *messagesAPI) WriteForced(w http.ResponseWriter, status int) error {
	return writeError(w, status, fmt.Sprintf("agenttest: status %d set by the test", status))
}
