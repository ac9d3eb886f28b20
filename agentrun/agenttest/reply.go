package agenttest

import (
	"encoding/json"
	"fmt"
	"net/http"
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

// message is a Messages API message object. Content is never nil so that
// it encodes as [] in message_start.
type message struct {
	ID           string      `json:"id"`
	Type         string      `json:"type"`
	Role         string      `json:"role"`
	Model        string      `json:"model"`
	Content      []textBlock `json:"content"`
	StopReason   *string     `json:"stop_reason"`
	StopSequence *string     `json:"stop_sequence"`
	Usage        usage       `json:"usage"`
}

// event is one server-sent event of a streamed reply.
type event struct {
	name string
	data any
}

// streamEvents returns the events that stream text as one assistant text
// block, in the order the Messages API sends them.
func streamEvents(id, model, text string) []event {
	endTurn := "end_turn"
	start := message{
		ID: id, Type: "message", Role: "assistant", Model: model,
		Content: []textBlock{},
		Usage:   usage{InputTokens: replyInputTokens, OutputTokens: 1},
	}
	return []event{
		{"message_start", map[string]any{"type": "message_start", "message": start}},
		{"content_block_start", map[string]any{
			"type": "content_block_start", "index": 0,
			"content_block": textBlock{Type: "text", Text: ""},
		}},
		{"content_block_delta", map[string]any{
			"type": "content_block_delta", "index": 0,
			"delta": map[string]string{"type": "text_delta", "text": text},
		}},
		{"content_block_stop", map[string]any{"type": "content_block_stop", "index": 0}},
		{"message_delta", map[string]any{
			"type":  "message_delta",
			"delta": map[string]any{"stop_reason": endTurn, "stop_sequence": nil},
			"usage": map[string]int{"output_tokens": replyOutputTokens},
		}},
		{"message_stop", map[string]any{"type": "message_stop"}},
	}
}

// writeStream answers with text as a streamed assistant message
// (text/event-stream), flushing after every event.
func writeStream(w http.ResponseWriter, id, model, text string) error {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for _, ev := range streamEvents(id, model, text) {
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

// writeMessage answers with text as a whole assistant message (JSON).
func writeMessage(w http.ResponseWriter, id, model, text string) error {
	endTurn := "end_turn"
	return writeJSON(w, http.StatusOK, message{
		ID: id, Type: "message", Role: "assistant", Model: model,
		Content:    []textBlock{{Type: "text", Text: text}},
		StopReason: &endTurn,
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
	return writeJSON(w, status, map[string]any{
		"type":  "error",
		"error": map[string]string{"type": typ, "message": msg},
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
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
