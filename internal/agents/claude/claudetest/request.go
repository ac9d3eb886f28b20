package claudetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
)

// Request is one HTTP request the stand-in received, as recorded before it
// was answered.
type Request struct {
	Method string
	// Path is the URL path without the query: Claude Code posts to
	// "/v1/messages?beta=true", recorded as Path "/v1/messages" and Query
	// "beta=true".
	Path   string
	Query  string
	Header http.Header
	Body   []byte
	// Status is the HTTP status code the stand-in answered with.
	Status int

	// The fields below are parsed from the JSON body of a POST to
	// /v1/messages or /v1/messages/count_tokens; they are zero for other
	// requests.

	Model  string
	Stream bool
	// System is the system prompt: a string, or the text of its text blocks
	// joined with newlines.
	System   string
	Messages []agenttest.Message
}

// ToolResults returns the tool_result blocks of r's user messages, in
// order: what the CLI sent back for the tool calls of earlier replies.
func (r Request) ToolResults() []agenttest.ToolResult {
	var results []agenttest.ToolResult
	for _, m := range r.UserMessages() {
		for _, b := range m.Content {
			if b.Type == "tool_result" {
				results = append(results, agenttest.ToolResult{ID: b.ID, Output: b.Text, IsError: b.IsError})
			}
		}
	}
	return results
}

// UserMessages returns the messages of r whose role is "user", in order.
func (r Request) UserMessages() []agenttest.Message {
	var user []agenttest.Message
	for _, m := range r.Messages {
		if m.Role == "user" {
			user = append(user, m)
		}
	}
	return user
}

// UserPrompts returns the Prompt of each user message of r, in order: the
// conversation as the user wrote it, turn by turn.
func (r Request) UserPrompts() []string {
	var prompts []string
	for _, m := range r.UserMessages() {
		prompts = append(prompts, m.Prompt())
	}
	return prompts
}

// wireRequest is the part of a Messages API request body the stand-in reads.
type wireRequest struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	System   json.RawMessage `json:"system"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// parseBody fills r's parsed fields from a Messages API request body.
func (r *Request) parseBody(body []byte) error {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return fmt.Errorf("agenttest: parse request body: %w", err)
	}
	system, err := agenttest.ParseContent(w.System)
	if err != nil {
		return fmt.Errorf("agenttest: parse system: %w", err)
	}
	var texts []string
	for _, b := range system {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	r.Model, r.Stream, r.System = w.Model, w.Stream, strings.Join(texts, "\n")
	r.Messages = make([]agenttest.Message, 0, len(w.Messages))
	for i, m := range w.Messages {
		content, err := agenttest.ParseContent(m.Content)
		if err != nil {
			return fmt.Errorf("agenttest: parse messages[%d]: %w", i, err)
		}
		r.Messages = append(r.Messages, agenttest.Message{Role: m.Role, Content: content})
	}
	return nil
}
