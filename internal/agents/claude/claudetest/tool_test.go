package claudetest

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
)

// toolFinal is the final text of the CallTool replies of these tests.
func toolFinal(r agenttest.ToolResult) string {
	if r.IsError {
		return "REFUSED: " + r.Output
	}
	return "DONE: " + r.Output
}

func TestAnthropic_CallTool(t *testing.T) {
	s := NewAnthropic(t)
	write := agenttest.ToolCall{ID: "toolu_1", Name: "Write", Input: map[string]string{"file_path": "/v/a.md", "content": "hi"}}
	s.SetAnswer(agenttest.CallTool[Request](write, toolFinal))

	// The first request carries no result: the reply is the tool call.
	status, _, body := mustDo(t, s, http.MethodPost, "/v1/messages", messagesBody(true, "write it"))
	if status != http.StatusOK {
		t.Fatalf("POST /v1/messages = %d", status)
	}
	var names []string
	var start, delta, stop map[string]any
	for _, ev := range agenttest.ParseSSE(t, body) {
		names = append(names, ev.Name)
		switch ev.Name {
		case "content_block_start":
			start = ev.Data["content_block"].(map[string]any)
		case "content_block_delta":
			delta = ev.Data["delta"].(map[string]any)
		case "message_delta":
			stop = ev.Data["delta"].(map[string]any)
		}
	}
	want := []string{"message_start", "content_block_start", "content_block_delta",
		"content_block_stop", "message_delta", "message_stop"}
	if !slices.Equal(names, want) {
		t.Errorf("events = %q; want %q", names, want)
	}
	if start["type"] != "tool_use" || start["id"] != "toolu_1" || start["name"] != "Write" || !reflect.DeepEqual(start["input"], map[string]any{}) {
		t.Errorf("content_block_start = %v; want an empty tool_use toolu_1 Write", start)
	}
	var input map[string]string
	if delta["type"] != "input_json_delta" || json.Unmarshal([]byte(delta["partial_json"].(string)), &input) != nil ||
		!reflect.DeepEqual(input, write.Input) {
		t.Errorf("content_block_delta = %v; want input_json_delta of %v", delta, write.Input)
	}
	if stop["stop_reason"] != "tool_use" {
		t.Errorf("stop_reason = %v; want tool_use", stop["stop_reason"])
	}

	// The next carries the refused result: the reply is the final text.
	next := `{"model":"m","messages":[{"role":"user","content":"write it"},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Write","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":"denied"}]}]}`
	status, _, body = mustDo(t, s, http.MethodPost, "/v1/messages", next)
	var msg struct {
		Content    []map[string]any `json:"content"`
		StopReason string           `json:"stop_reason"`
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil || status != http.StatusOK {
		t.Fatalf("POST /v1/messages = %d %q: %v", status, body, err)
	}
	if len(msg.Content) != 1 || msg.Content[0]["text"] != "REFUSED: denied" || msg.StopReason != "end_turn" {
		t.Errorf("final message = %+v; want the text REFUSED: denied, end_turn", msg)
	}
	if got := s.MessageRequests()[1].ToolResults(); !reflect.DeepEqual(got, []agenttest.ToolResult{{ID: "toolu_1", Output: "denied", IsError: true}}) {
		t.Errorf("ToolResults() = %+v", got)
	}
}

func TestAnthropic_ToolCallIDsMadeUp(t *testing.T) {
	s := NewAnthropic(t)
	s.SetAnswer(func(Request) agenttest.Reply {
		return agenttest.Reply{Text: "first", ToolCalls: []agenttest.ToolCall{{Name: "Read"}, {Name: "Read"}}}
	})
	_, _, body := mustDo(t, s, http.MethodPost, "/v1/messages", messagesBody(false, "x"))
	var msg struct{ Content []map[string]any }
	if err := json.Unmarshal([]byte(body), &msg); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 3 || msg.Content[0]["text"] != "first" {
		t.Fatalf("content = %v; want a text block and two tool_use blocks", msg.Content)
	}
	a, b := msg.Content[1]["id"], msg.Content[2]["id"]
	if a == "" || a == b || !reflect.DeepEqual(msg.Content[1]["input"], map[string]any{}) {
		t.Errorf("tool_use blocks %v, %v; want distinct made-up ids and {} inputs", msg.Content[1], msg.Content[2])
	}
}
