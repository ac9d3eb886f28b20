package agenttest

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"testing"
)

// toolFinal is the final text of the CallTool replies of these tests.
func toolFinal(r ToolResult) string {
	if r.IsError {
		return "REFUSED: " + r.Output
	}
	return "DONE: " + r.Output
}

func TestAnthropic_CallTool(t *testing.T) {
	s := NewAnthropic(t)
	write := ToolCall{ID: "toolu_1", Name: "Write", Input: map[string]string{"file_path": "/v/a.md", "content": "hi"}}
	s.SetAnswer(CallTool[Request](write, toolFinal))

	// The first request carries no result: the reply is the tool call.
	status, _, body := mustDo(t, s, http.MethodPost, "/v1/messages", messagesBody(true, "write it"))
	if status != http.StatusOK {
		t.Fatalf("POST /v1/messages = %d", status)
	}
	var names []string
	var start, delta, stop map[string]any
	for _, ev := range parseSSE(t, body) {
		names = append(names, ev.name)
		switch ev.name {
		case "content_block_start":
			start = ev.data["content_block"].(map[string]any)
		case "content_block_delta":
			delta = ev.data["delta"].(map[string]any)
		case "message_delta":
			stop = ev.data["delta"].(map[string]any)
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
	if got := s.MessageRequests()[1].ToolResults(); !reflect.DeepEqual(got, []ToolResult{{ID: "toolu_1", Output: "denied", IsError: true}}) {
		t.Errorf("ToolResults() = %+v", got)
	}
}

func TestAnthropic_ToolCallIDsMadeUp(t *testing.T) {
	s := NewAnthropic(t)
	s.SetAnswer(func(Request) Reply {
		return Reply{Text: "first", ToolCalls: []ToolCall{{Name: "Read"}, {Name: "Read"}}}
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

func TestOpenAI_CallTool(t *testing.T) {
	for _, tc := range []struct {
		name      string
		call      ToolCall
		kind, key string // item type, and the field holding the input
		input     string
	}{
		{"custom", ToolCall{ID: "call_1", Name: "exec", Namespace: "functions", Input: "text(1)"}, "custom_tool_call", "input", "text(1)"},
		{"function", ToolCall{ID: "call_1", Name: "shell", Input: map[string]any{"cmd": "ls"}}, "function_call", "arguments", `{"cmd":"ls"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewOpenAI(t)
			s.SetAnswer(CallTool[ResponsesRequest](tc.call, toolFinal))
			_, _, body := mustPost(t, s, "/v1/responses", `{"model":"m","stream":true,"input":[{"type":"message","role":"user","content":"go"}]}`)
			events := parseSSE(t, body)
			var names []string
			for _, ev := range events {
				names = append(names, ev.name)
			}
			want := []string{"response.created", "response.in_progress", "response.output_item.added",
				"response." + tc.kind + "_input.delta", "response." + tc.kind + "_input.done",
				"response.output_item.done", "response.completed"}
			if tc.kind == "function_call" {
				want[3], want[4] = "response.function_call_arguments.delta", "response.function_call_arguments.done"
			}
			if !slices.Equal(names, want) {
				t.Fatalf("events %q; want %q", names, want)
			}
			item := events[5].data["item"].(map[string]any)
			if item["type"] != tc.kind || item["call_id"] != "call_1" || item["name"] != tc.call.Name || item[tc.key] != tc.input ||
				(tc.call.Namespace != "" && item["namespace"] != tc.call.Namespace) {
				t.Errorf("output item %v; want a %s call_1 %s with %s %q", item, tc.kind, tc.call.Name, tc.key, tc.input)
			}
			output := events[6].data["response"].(map[string]any)["output"].([]any)
			if len(output) != 1 || !reflect.DeepEqual(output[0], item) {
				t.Errorf("response.completed output %v; want the call item", output)
			}

			outType := "custom_tool_call_output"
			if tc.kind == "function_call" {
				outType = "function_call_output"
			}
			_, _, body = mustPost(t, s, "/v1/responses", `{"model":"m","stream":true,"input":[
				{"type":"message","role":"user","content":"go"},
				{"type":"`+outType+`","call_id":"call_1","output":"it ran"}]}`)
			events = parseSSE(t, body)
			if got := events[4].data["delta"]; got != "DONE: it ran" {
				t.Errorf("final text %q; want DONE: it ran", got)
			}
			if got := s.ResponseRequests()[1].ToolResults(); !reflect.DeepEqual(got, []ToolResult{{ID: "call_1", Output: "it ran"}}) {
				t.Errorf("ToolResults() = %+v", got)
			}
		})
	}
}
