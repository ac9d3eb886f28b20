package agenttest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Message is one entry of a model request's conversation: of an Anthropic
// Messages request's "messages" array (claudetest.Request), or a message
// item of an OpenAI Responses request's input (codextest.ResponsesRequest).
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

// wireBlock is a content block as ParseContent reads it.
type wireBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

// ParseContent reads the content field of a message of a model request:
// absent or null, a string (one text block) or an array of Messages API
// content blocks (text, tool_use, tool_result…).
func ParseContent(raw json.RawMessage) ([]Block, error) {
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
			content, err := ParseContent(b.Content)
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
