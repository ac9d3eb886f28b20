package agenttest

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Reply is one answer of a stand-in to a model call: text, tool calls, or
// both (the text first). A reply with tool calls ends the model's turn with
// stop reason "tool_use" (Anthropic) or with the calls as output items
// (OpenAI Responses), so the CLI runs the tools and calls the model again
// with their results (claudetest.Request.ToolResults, codextest.ResponsesRequest.ToolResults).
type Reply struct {
	Text      string
	ToolCalls []ToolCall
}

// WithCallIDs returns r with its own copy of its tool calls, each call
// without an ID given one made up of prefix, n (the stand-in's number for
// the request) and the call's index: "toolu_…", "call_…".
func (r Reply) WithCallIDs(prefix string, n int) Reply {
	r.ToolCalls = slices.Clone(r.ToolCalls)
	for i := range r.ToolCalls {
		if r.ToolCalls[i].ID == "" {
			r.ToolCalls[i].ID = fmt.Sprintf("%s_%020x%02x", prefix, n, i)
		}
	}
	return r
}

// ToolCall is a call of one of the CLI's tools by the model.
type ToolCall struct {
	// ID identifies the call; the CLI's result for it carries the same ID.
	// Empty means one the stand-in makes up.
	ID string
	// Name is the tool's name as the CLI declared it: "Write" for Claude
	// Code, "exec" for Codex's code mode.
	Name string
	// Namespace is the namespace of the tool in an OpenAI Responses request
	// that groups its tools (Codex declares "exec" in "functions"); empty
	// for a top-level tool, and ignored by the Anthropic stand-in.
	Namespace string
	// Input is the call's arguments. For the Anthropic stand-in it is a JSON
	// object (a map or a struct). For the OpenAI stand-in a string makes a
	// custom (freeform) tool call with that input, and anything else a
	// function call with Input encoded as its JSON arguments.
	Input any
}

// ToolResult is what a CLI sent back to the model for one tool call.
type ToolResult struct {
	// ID is the ToolCall's ID.
	ID string
	// Output is the result's text (the text blocks of an Anthropic
	// tool_result joined with newlines; the output of an OpenAI
	// function_call_output or custom_tool_call_output).
	Output string
	// IsError is the is_error flag of an Anthropic tool_result; the
	// Responses API has none.
	IsError bool
}

// toolResults is what both stand-ins' requests have in common for CallTool.
type toolResults interface {
	ToolResults() []ToolResult
}

// CallTool returns a reply function for either stand-in (claudetest.Server.SetAnswer,
// codextest.OpenAI.SetAnswer) that has the model call a tool once and then finish: a
// request that carries no result for call yet is answered with call, and
// one that does with the text final makes of that result. call.ID is
// "call_agenttest_1" when empty.
func CallTool[R toolResults](call ToolCall, final func(ToolResult) string) func(R) Reply {
	if call.ID == "" {
		call.ID = "call_agenttest_1"
	}
	return func(r R) Reply {
		for _, res := range r.ToolResults() {
			if res.ID == call.ID {
				return Reply{Text: final(res)}
			}
		}
		return Reply{ToolCalls: []ToolCall{call}}
	}
}

// InputJSON returns the JSON encoding of a tool call's input, {} for nil.
func InputJSON(input any) (json.RawMessage, error) {
	if input == nil {
		return json.RawMessage("{}"), nil
	}
	return json.Marshal(input)
}
