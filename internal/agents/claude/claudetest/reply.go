package claudetest

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
)

// The usage every reply reports, as the stand-in that recorded the fixtures
// did (Claude Code prices it at $0.0002 a turn).
const (
	replyInputTokens  = 10
	replyOutputTokens = 8
)

// usage is the "usage" object of a reply.
type usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// toolUseBlock is a tool_use content block.
type toolUseBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// message is a Messages API message object. Content is never nil so that
// it encodes as [] in message_start.
type message struct {
	ID           string  `json:"id"`
	Type         string  `json:"type"`
	Role         string  `json:"role"`
	Model        string  `json:"model"`
	Content      []any   `json:"content"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
	Usage        usage   `json:"usage"`
}

// event is one server-sent event of a streamed reply.
type event struct {
	name string
	data any
}

// stopReason is the stop reason of a reply: "tool_use" when it calls tools.
func stopReason(r agenttest.Reply) string {
	if len(r.ToolCalls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

// contentBlocks returns the content blocks of r: a text block unless r has
// tool calls and no text, then a tool_use block for each call.
func contentBlocks(r agenttest.Reply) ([]any, error) {
	var blocks []any
	if r.Text != "" || len(r.ToolCalls) == 0 {
		blocks = append(blocks, textBlock{Type: "text", Text: r.Text})
	}
	for _, c := range r.ToolCalls {
		input, err := agenttest.InputJSON(c.Input)
		if err != nil {
			return nil, fmt.Errorf("agenttest: encode the input of tool call %s: %w", c.Name, err)
		}
		blocks = append(blocks, toolUseBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: input})
	}
	return blocks, nil
}

// streamEvents returns the events that stream r as an assistant message, in
// the order the Messages API sends them: a text block streamed as one
// text_delta, and each tool_use block with its input as one
// input_json_delta.
func streamEvents(id, model string, r agenttest.Reply) ([]event, error) {
	blocks, err := contentBlocks(r)
	if err != nil {
		return nil, err
	}
	start := message{
		ID: id, Type: "message", Role: "assistant", Model: model,
		Content: []any{},
		Usage:   usage{InputTokens: replyInputTokens, OutputTokens: 1},
	}
	events := []event{{"message_start", map[string]any{"type": "message_start", "message": start}}}
	for i, b := range blocks {
		var first, delta any
		switch b := b.(type) {
		case textBlock:
			first = textBlock{Type: "text", Text: ""}
			delta = map[string]string{"type": "text_delta", "text": b.Text}
		case toolUseBlock:
			empty := b
			empty.Input = json.RawMessage("{}")
			first = empty
			delta = map[string]string{"type": "input_json_delta", "partial_json": string(b.Input)}
		}
		events = append(events,
			event{"content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": first}},
			event{"content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": delta}},
			event{"content_block_stop", map[string]any{"type": "content_block_stop", "index": i}},
		)
	}
	return append(events,
		event{"message_delta", map[string]any{
			"type":  "message_delta",
			"delta": map[string]any{"stop_reason": stopReason(r), "stop_sequence": nil},
			"usage": map[string]int{"output_tokens": replyOutputTokens},
		}},
		event{"message_stop", map[string]any{"type": "message_stop"}},
	), nil
}

// writeStream answers with r as a streamed assistant message
// (text/event-stream), flushing after every event.
func writeStream(w http.ResponseWriter, id, model string, r agenttest.Reply) error {
	events, err := streamEvents(id, model, r)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for _, ev := range events {
		data, err := json.Marshal(ev.data)
		if err != nil {
			return fmt.Errorf("agenttest: encode %s: %w", ev.name, err)
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, data); err != nil {
			return fmt.Errorf("agenttest: write %s: %w", ev.name, err)
		}
		if err := rc.Flush(); err != nil {
			return fmt.Errorf("agenttest: flush %s: %w", ev.name, err)
		}
	}
	return nil
}

// writeMessage answers with r as a whole assistant message (JSON).
func writeMessage(w http.ResponseWriter, id, model string, r agenttest.Reply) error {
	blocks, err := contentBlocks(r)
	if err != nil {
		return err
	}
	stop := stopReason(r)
	return agenttest.WriteJSON(w, http.StatusOK, message{
		ID: id, Type: "message", Role: "assistant", Model: model,
		Content:    blocks,
		StopReason: &stop,
		Usage:      usage{InputTokens: replyInputTokens, OutputTokens: replyOutputTokens},
	})
}

// errorTypes maps HTTP statuses to the Messages API's error types.
var errorTypes = map[int]string{
	http.StatusBadRequest:            "invalid_request_error",
	http.StatusUnauthorized:          "authentication_error",
	http.StatusForbidden:             "permission_error",
	http.StatusNotFound:              "not_found_error",
	http.StatusRequestEntityTooLarge: "request_too_large",
	http.StatusTooManyRequests:       "rate_limit_error",
	529:                              "overloaded_error",
}

// writeError answers with status and a Messages API error object.
func writeError(w http.ResponseWriter, status int, msg string) error {
	typ, ok := errorTypes[status]
	if !ok {
		typ = "api_error"
	}
	return agenttest.WriteJSON(w, status, map[string]any{
		"type":  "error",
		"error": map[string]string{"type": typ, "message": msg},
	})
}
