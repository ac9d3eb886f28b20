package codextest

import (
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

func TestOpenAI_CallTool(t *testing.T) {
	for _, tc := range []struct {
		name      string
		call      agenttest.ToolCall
		kind, key string // item type, and the field holding the input
		input     string
	}{
		{"custom", agenttest.ToolCall{ID: "call_1", Name: "exec", Namespace: "functions", Input: "text(1)"}, "custom_tool_call", "input", "text(1)"},
		{"function", agenttest.ToolCall{ID: "call_1", Name: "shell", Input: map[string]any{"cmd": "ls"}}, "function_call", "arguments", `{"cmd":"ls"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewOpenAI(t)
			s.SetAnswer(agenttest.CallTool[ResponsesRequest](tc.call, toolFinal))
			_, _, body := mustPost(t, s, "/v1/responses", `{"model":"m","stream":true,"input":[{"type":"message","role":"user","content":"go"}]}`)
			events := agenttest.ParseSSE(t, body)
			var names []string
			for _, ev := range events {
				names = append(names, ev.Name)
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
			item := events[5].Data["item"].(map[string]any)
			if item["type"] != tc.kind || item["call_id"] != "call_1" || item["name"] != tc.call.Name || item[tc.key] != tc.input ||
				(tc.call.Namespace != "" && item["namespace"] != tc.call.Namespace) {
				t.Errorf("output item %v; want a %s call_1 %s with %s %q", item, tc.kind, tc.call.Name, tc.key, tc.input)
			}
			output := events[6].Data["response"].(map[string]any)["output"].([]any)
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
			events = agenttest.ParseSSE(t, body)
			if got := events[4].Data["delta"]; got != "DONE: it ran" {
				t.Errorf("final text %q; want DONE: it ran", got)
			}
			if got := s.ResponseRequests()[1].ToolResults(); !reflect.DeepEqual(got, []agenttest.ToolResult{{ID: "call_1", Output: "it ran"}}) {
				t.Errorf("ToolResults() = %+v", got)
			}
		})
	}
}
