package agenttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
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
	Messages []Message
}

// Message is one entry of a request's "messages" array.
type Message struct {
	// Role is "user" or "assistant"; Claude Code 2.1.330 also sends a
	// "system" entry (its environment description) among the messages.
	Role    string
	Content []Block
}

// Block is one content block of a message. A message whose content is a
// plain string has one text block.
type Block struct {
	// Type is the block's type: "text", "tool_use", "tool_result", "image"…
	Type string
	// Text is the text of a text block, and the text of a tool_result
	// block's content (its text blocks joined with newlines); empty for
	// other types.
	Text string
	// ID is the id of a tool_use block, and the tool_use_id of a
	// tool_result block.
	ID string
	// Name is the tool name of a tool_use block.
	Name string
	// IsError is the is_error flag of a tool_result block.
	IsError bool
}

// ToolResults returns the tool_result blocks of r's user messages, in
// order: what the CLI sent back for the tool calls of earlier replies.
func (r Request) ToolResults() []ToolResult {
	var results []ToolResult
	for _, m := range r.UserMessages() {
		for _, b := range m.Content {
			if b.Type == "tool_result" {
				results = append(results, ToolResult{ID: b.ID, Output: b.Text, IsError: b.IsError})
			}
		}
	}
	return results
}

// reminderPrefix starts the text blocks Claude Code inserts into user
// messages (attribution rules and other context for the model).
const reminderPrefix = "<system-reminder>"

// Text returns the text of m's text blocks, joined with newlines.
func (m Message) Text() string {
	return m.join(func(Block) bool { return true })
}

// Prompt returns the text of m's text blocks joined with newlines, leaving
// out the "<system-reminder>" blocks Claude Code inserts: for a user
// message, the text the user sent.
func (m Message) Prompt() string {
	return m.join(func(b Block) bool { return !strings.HasPrefix(b.Text, reminderPrefix) })
}

func (m Message) join(keep func(Block) bool) string {
	var texts []string
	for _, b := range m.Content {
		if b.Type == "text" && keep(b) {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// UserMessages returns the messages of r whose role is "user", in order.
func (r Request) UserMessages() []Message {
	var user []Message
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

type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

// parseBody fills r's parsed fields from a Messages API request body.
func (r *Request) parseBody(body []byte) error {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return fmt.Errorf("agenttest: parse request body: %w", err)
	}
	system, err := parseContent(w.System)
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
	r.Messages = make([]Message, 0, len(w.Messages))
	for i, m := range w.Messages {
		content, err := parseContent(m.Content)
		if err != nil {
			return fmt.Errorf("agenttest: parse messages[%d]: %w", i, err)
		}
		r.Messages = append(r.Messages, Message{Role: m.Role, Content: content})
	}
	return nil
}

// parseContent reads a content field: absent or null, a string (one text
// block) or an array of blocks.
func parseContent(raw json.RawMessage) ([]Block, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []Block{{Type: "text", Text: s}}, nil
	}
	var wire []wireBlock
	if err := json.Unmarshal(raw, &wire); err != nil {
		return nil, err
	}
	blocks := make([]Block, len(wire))
	for i, b := range wire {
		blocks[i] = Block{Type: b.Type}
		switch b.Type {
		case "text":
			blocks[i].Text = b.Text
		case "tool_use":
			blocks[i].ID, blocks[i].Name = b.ID, b.Name
		case "tool_result":
			content, err := parseContent(b.Content)
			if err != nil {
				return nil, fmt.Errorf("tool_result %s: %w", b.ToolUseID, err)
			}
			var texts []string
			for _, c := range content {
				if c.Type == "text" {
					texts = append(texts, c.Text)
				}
			}
			blocks[i].ID, blocks[i].IsError, blocks[i].Text = b.ToolUseID, b.IsError, strings.Join(texts, "\n")
		}
	}
	return blocks, nil
}
