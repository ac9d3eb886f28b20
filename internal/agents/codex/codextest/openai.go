package codextest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
)

// OpenAI is a loopback stand-in for the OpenAI Responses API as Codex CLI
// CodexVersion calls it, started on 127.0.0.1 by NewOpenAI. It records every
// request and answers the way the stand-in that recorded knotd's Codex
// fixtures did (agents/codex/testdata/recorded/README.md):
//
//   - POST /v1/responses: a text/event-stream of response.created,
//     response.in_progress, response.output_item.added,
//     response.content_part.added, response.output_text.delta,
//     response.output_text.done, response.content_part.done,
//     response.output_item.done and response.completed (with usage): one
//     assistant message, "MOCK REPLY (user messages seen: N)", N counting
//     the user messages of the request that are not context Codex adds
//     itself (ResponsesRequest.UserPrompts); usage 100·N input tokens and 9
//     output tokens;
//   - anything else: a 404 with an API error object, logged to the test.
//
// SetAnswer makes it answer with a Reply that may call Codex's tools (see
// CallTool); SetStatus makes it answer with an error status instead. Its
// methods are safe for concurrent use.
type OpenAI struct {
	// URL is the server's base URL, http://127.0.0.1:PORT; the Responses
	// API is under URL+"/v1".
	URL string

	*agenttest.StandIn[ResponsesRequest]

	mu     sync.Mutex
	answer func(ResponsesRequest) agenttest.Reply
}

// The usage every reply reports, as the recording's stand-in did.
const (
	responsesInputTokensPerUser = 100
	responsesOutputTokens       = 9
)

// ResponsesRequest is one HTTP request the OpenAI stand-in received, as
// recorded before it was answered.
type ResponsesRequest struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
	// Status is the HTTP status code the stand-in answered with.
	Status int

	// The fields below are parsed from the JSON body of a POST to
	// /v1/responses; they are zero for other requests.

	Model        string
	Stream       bool
	Instructions string
	// Input holds the "message" items of the request's input, in order,
	// with Role "developer", "user" or "assistant". Their input_text and
	// output_text parts become blocks of Type "text", so that Message.Text
	// works; other parts keep their type and no text. Items of other types
	// (additional_tools, function calls…) are left out.
	Input []agenttest.Message
	// Results holds the input's function_call_output and
	// custom_tool_call_output items, in order: what the CLI sent back for
	// the tool calls of earlier replies.
	Results []agenttest.ToolResult
}

// ToolResults returns r.Results.
func (r ResponsesRequest) ToolResults() []agenttest.ToolResult { return r.Results }

// codexContext starts the text of the user messages Codex CLI adds to the
// conversation itself (the environment, AGENTS.md and skills).
var codexContext = []string{
	"<environment_context>",
	"<user_instructions>",
	"# AGENTS.md instructions",
	"<skills_instructions>",
	"<turn_aborted>",
}

// isCodexContext reports whether m is a user message Codex CLI added.
func isCodexContext(m agenttest.Message) bool {
	text := strings.TrimSpace(m.Text())
	for _, p := range codexContext {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}

// UserPrompts returns the text of each user message of r that Codex did not
// add itself, in order: the conversation as the user wrote it, turn by turn.
func (r ResponsesRequest) UserPrompts() []string {
	var prompts []string
	for _, m := range r.Input {
		if m.Role == "user" && !isCodexContext(m) {
			prompts = append(prompts, m.Text())
		}
	}
	return prompts
}

// Texts returns the text of each message of r with the given role, in order.
func (r ResponsesRequest) Texts(role string) []string {
	var texts []string
	for _, m := range r.Input {
		if m.Role == role {
			texts = append(texts, m.Text())
		}
	}
	return texts
}

// DefaultResponsesReply is the OpenAI stand-in's default reply:
// "MOCK REPLY (user messages seen: N)", N counting r.UserPrompts.
func DefaultResponsesReply(r ResponsesRequest) string {
	return fmt.Sprintf("MOCK REPLY (user messages seen: %d)", len(r.UserPrompts()))
}

// NewOpenAI starts an OpenAI stand-in on a loopback port. It is closed when
// tb's test ends (t.Cleanup); Close may also be called earlier.
func NewOpenAI(tb testing.TB) *OpenAI {
	tb.Helper()
	s := &OpenAI{}
	s.StandIn = agenttest.NewStandIn[ResponsesRequest](tb, (*responsesAPI)(s))
	s.URL = s.StandIn.URL
	return s
}

// SetReply makes the server answer later requests with reply's text; nil
// restores DefaultResponsesReply. reply is called from the server's handler
// goroutines.
func (s *OpenAI) SetReply(reply func(ResponsesRequest) string) {
	if reply == nil {
		s.SetAnswer(nil)
		return
	}
	s.SetAnswer(func(r ResponsesRequest) agenttest.Reply { return agenttest.Reply{Text: reply(r)} })
}

// SetAnswer makes the server answer later requests with answer's Reply,
// which may call tools: after the text's message item, each call becomes a
// function_call output item (arguments: the JSON of its Input) or, when its
// Input is a string, a custom_tool_call item, with a call_id "call_…" the
// stand-in makes up when the call has none. nil restores
// DefaultResponsesReply. answer is called from the server's handler
// goroutines.
func (s *OpenAI) SetAnswer(answer func(ResponsesRequest) agenttest.Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answer = answer
}

// SetStatus makes the server answer every later request with the HTTP
// status code and an API error object (for a 401, the one the recording's
// stand-in sent: "Incorrect API key provided: dummy."). 0 restores normal
// answers.
func (s *OpenAI) SetStatus(code int) {
	s.SetStatusTimes(code, -1)
}

// SetStatusTimes is SetStatus for the next n requests only; after them the
// server answers normally again. n < 0 means every request.
func (s *OpenAI) SetStatusTimes(code, n int) {
	s.Force(code, n)
}

// ResponseRequests returns the POST /v1/responses requests received so far
// (the model calls), in arrival order.
func (s *OpenAI) ResponseRequests() []ResponsesRequest {
	var calls []ResponsesRequest
	for _, r := range s.Requests() {
		if r.Method == http.MethodPost && r.Path == "/v1/responses" {
			calls = append(calls, r)
		}
	}
	return calls
}

// responsesAPI is the OpenAI seen as the agenttest.API it serves.
type responsesAPI OpenAI

func (s *responsesAPI) APIName() string { return "OpenAI" }

func (s *responsesAPI) SetRecordStatus(r *ResponsesRequest, status int) { r.Status = status }

// Record records r; its one route is POST /v1/responses, whose body it
// parses.
func (s *responsesAPI) Record(r *http.Request, body []byte, parse bool) (ResponsesRequest, bool, error) {
	req := ResponsesRequest{
		Method: r.Method,
		Path:   r.URL.Path,
		Query:  r.URL.RawQuery,
		Header: r.Header.Clone(),
		Body:   body,
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		return req, false, nil
	}
	var err error
	if parse {
		err = req.parseBody(body)
	}
	return req, true, err
}

func (s *responsesAPI) Respond(req *ResponsesRequest, n int) func(http.ResponseWriter) error {
	s.mu.Lock()
	answerFn := s.answer
	s.mu.Unlock()
	if answerFn == nil {
		answerFn = func(r ResponsesRequest) agenttest.Reply { return agenttest.Reply{Text: DefaultResponsesReply(r)} }
	}
	reply := answerFn(*req).WithCallIDs("call", n)
	in := int64(responsesInputTokensPerUser * len(req.UserPrompts()))
	model := req.Model
	return func(w http.ResponseWriter) error { return writeResponsesStream(w, n, model, reply, in) }
}

func (s *responsesAPI) WriteError(w http.ResponseWriter, status int, msg string) error {
	return writeOpenAIError(w, status, msg)
}

func (s *responsesAPI) WriteForced(w http.ResponseWriter, status int) error {
	msg := fmt.Sprintf("agenttest: status %d set by the test", status)
	if status == http.StatusUnauthorized {
		msg = "Incorrect API key provided: dummy."
	}
	return writeOpenAIError(w, status, msg)
}

// wireResponsesRequest is the part of a Responses API request body the
// stand-in reads.
type wireResponsesRequest struct {
	Model        string `json:"model"`
	Stream       bool   `json:"stream"`
	Instructions string `json:"instructions"`
	Input        []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		CallID  string          `json:"call_id"`
		Output  json.RawMessage `json:"output"`
	} `json:"input"`
}

// parseBody fills r's parsed fields from a Responses API request body.
func (r *ResponsesRequest) parseBody(body []byte) error {
	var w wireResponsesRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return fmt.Errorf("agenttest: parse request body: %w", err)
	}
	r.Model, r.Stream, r.Instructions = w.Model, w.Stream, w.Instructions
	for i, item := range w.Input {
		if item.Type == "function_call_output" || item.Type == "custom_tool_call_output" {
			out, err := parseResponsesContent(item.Output)
			if err != nil {
				return fmt.Errorf("agenttest: parse input[%d] output: %w", i, err)
			}
			r.Results = append(r.Results, agenttest.ToolResult{ID: item.CallID, Output: agenttest.Message{Content: out}.Text()})
			continue
		}
		if item.Type != "message" && !(item.Type == "" && item.Role != "") {
			continue
		}
		blocks, err := parseResponsesContent(item.Content)
		if err != nil {
			return fmt.Errorf("agenttest: parse input[%d]: %w", i, err)
		}
		r.Input = append(r.Input, agenttest.Message{Role: item.Role, Content: blocks})
	}
	return nil
}

// parseResponsesContent reads a message's content: a string (one text
// block) or an array of parts, whose input_text and output_text parts become
// text blocks.
func parseResponsesContent(raw json.RawMessage) ([]agenttest.Block, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return agenttest.ParseContent(raw)
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, err
	}
	blocks := make([]agenttest.Block, len(parts))
	for i, p := range parts {
		blocks[i] = agenttest.Block{Type: p.Type}
		if p.Type == "input_text" || p.Type == "output_text" || p.Type == "text" {
			blocks[i] = agenttest.Block{Type: "text", Text: p.Text}
		}
	}
	return blocks, nil
}

// responsesUsage is the "usage" object of response.completed.
type responsesUsage struct {
	InputTokens         int64          `json:"input_tokens"`
	InputTokensDetails  map[string]int `json:"input_tokens_details"`
	OutputTokens        int64          `json:"output_tokens"`
	OutputTokensDetails map[string]int `json:"output_tokens_details"`
	TotalTokens         int64          `json:"total_tokens"`
}

// writeResponsesStream answers with r as a streamed response
// (text/event-stream), flushing after every event: a message item with r's
// text (unless r only calls tools), then an item for each tool call.
func writeResponsesStream(w http.ResponseWriter, n int, model string, r agenttest.Reply, inputTokens int64) error {
	respID := fmt.Sprintf("resp_%024x", n)
	created := time.Now().Unix()
	response := func(status string, output []any, usage *responsesUsage) map[string]any {
		r := map[string]any{
			"id": respID, "object": "response", "created_at": created,
			"status": status, "model": model, "output": output,
		}
		if usage != nil {
			r["usage"] = usage
		}
		return r
	}
	events := []map[string]any{
		{"type": "response.created", "response": response("in_progress", []any{}, nil)},
		{"type": "response.in_progress", "response": response("in_progress", []any{}, nil)},
	}
	var output []any
	if r.Text != "" || len(r.ToolCalls) == 0 {
		msgID := fmt.Sprintf("msg_%024x", n)
		idx := len(output)
		part := func(t string) map[string]any {
			return map[string]any{"type": "output_text", "text": t, "annotations": []any{}}
		}
		item := func(status string, content []any) map[string]any {
			return map[string]any{"id": msgID, "type": "message", "status": status, "role": "assistant", "content": content}
		}
		done := item("completed", []any{part(r.Text)})
		events = append(events,
			map[string]any{"type": "response.output_item.added", "output_index": idx, "item": item("in_progress", []any{})},
			map[string]any{"type": "response.content_part.added", "item_id": msgID, "output_index": idx, "content_index": 0, "part": part("")},
			map[string]any{"type": "response.output_text.delta", "item_id": msgID, "output_index": idx, "content_index": 0, "delta": r.Text},
			map[string]any{"type": "response.output_text.done", "item_id": msgID, "output_index": idx, "content_index": 0, "text": r.Text},
			map[string]any{"type": "response.content_part.done", "item_id": msgID, "output_index": idx, "content_index": 0, "part": part(r.Text)},
			map[string]any{"type": "response.output_item.done", "output_index": idx, "item": done},
		)
		output = append(output, done)
	}
	for i, c := range r.ToolCalls {
		idx := len(output)
		itemID := fmt.Sprintf("fc_%022x%02x", n, i)
		kind, field, key := "function_call", "arguments", "function_call_arguments"
		var input string
		if s, ok := c.Input.(string); ok {
			kind, field, key, input = "custom_tool_call", "input", "custom_tool_call_input", s
		} else {
			args, err := agenttest.InputJSON(c.Input)
			if err != nil {
				return fmt.Errorf("agenttest: encode the arguments of tool call %s: %w", c.Name, err)
			}
			input = string(args)
		}
		item := func(status, input string) map[string]any {
			m := map[string]any{"id": itemID, "type": kind, "status": status, "call_id": c.ID, "name": c.Name, field: input}
			if c.Namespace != "" {
				m["namespace"] = c.Namespace
			}
			return m
		}
		done := item("completed", input)
		events = append(events,
			map[string]any{"type": "response.output_item.added", "output_index": idx, "item": item("in_progress", "")},
			map[string]any{"type": "response." + key + ".delta", "item_id": itemID, "output_index": idx, "delta": input},
			map[string]any{"type": "response." + key + ".done", "item_id": itemID, "output_index": idx, field: input},
			map[string]any{"type": "response.output_item.done", "output_index": idx, "item": done},
		)
		output = append(output, done)
	}
	usage := &responsesUsage{
		InputTokens:         inputTokens,
		InputTokensDetails:  map[string]int{"cached_tokens": 0},
		OutputTokens:        responsesOutputTokens,
		OutputTokensDetails: map[string]int{"reasoning_tokens": 0},
		TotalTokens:         inputTokens + responsesOutputTokens,
	}
	events = append(events, map[string]any{"type": "response.completed", "response": response("completed", output, usage)})

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for i, ev := range events {
		ev["sequence_number"] = i
		name := ev["type"].(string)
		data, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("agenttest: encode %s: %w", name, err)
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data); err != nil {
			return fmt.Errorf("agenttest: write %s: %w", name, err)
		}
		if err := rc.Flush(); err != nil {
			return fmt.Errorf("agenttest: flush %s: %w", name, err)
		}
	}
	return nil
}

// openAIErrorTypes maps HTTP statuses to the OpenAI API's error types and codes.
var openAIErrorTypes = map[int][2]string{
	http.StatusUnauthorized:        {"invalid_request_error", "invalid_api_key"},
	http.StatusNotFound:            {"invalid_request_error", "not_found"},
	http.StatusTooManyRequests:     {"rate_limit_error", "rate_limit_exceeded"},
	http.StatusInternalServerError: {"server_error", "server_error"},
}

// writeOpenAIError answers with status and an OpenAI API error object.
func writeOpenAIError(w http.ResponseWriter, status int, msg string) error {
	kind, ok := openAIErrorTypes[status]
	if !ok {
		kind = [2]string{"invalid_request_error", ""}
		if status >= 500 {
			kind = [2]string{"server_error", "server_error"}
		}
	}
	var code any
	if kind[1] != "" {
		code = kind[1]
	}
	return agenttest.WriteJSON(w, status, map[string]any{"error": map[string]any{
		"message": msg, "type": kind[0], "param": nil, "code": code,
	}})
}
