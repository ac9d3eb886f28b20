package transcript

import "encoding/json"

// BlockType is the kind of a content block.
type BlockType string

// The closed set of block types.
const (
	// BlockText is text the agent wrote for the user.
	BlockText BlockType = "text"
	// BlockThinking is the agent's reasoning, or the summary of it the CLI
	// shows.
	BlockThinking BlockType = "thinking"
	// BlockToolUse is a tool call: ID, Name and Input.
	BlockToolUse BlockType = "tool_use"
	// BlockToolResult is what a tool call returned: ToolUseID, Content and
	// IsError.
	BlockToolResult BlockType = "tool_result"
)

// Fidelity says how faithfully a block was recovered from a CLI's output.
type Fidelity string

// The fidelity markers, from most to least faithful.
const (
	// Native: the CLI printed this block with this structure, and its
	// fields are copied (Claude's content blocks, Gemini's tool events).
	Native Fidelity = "native"
	// Reconstructed: knotd built the block from the CLI's own records of
	// another shape (a Codex command execution becomes a tool_use and a
	// tool_result; structured tool output flattened to text).
	Reconstructed Fidelity = "reconstructed"
	// TextOnly: only the final reply text was available; whatever the
	// agent did on the way (tools, reasoning) is not in the transcript.
	TextOnly Fidelity = "text-only"
)

// Block is one content block of an assistant message. Which fields are set
// depends on Type; the others are empty.
type Block struct {
	// Type is the kind of block; Fidelity how it was recovered.
	Type     BlockType `json:"type"`
	Fidelity Fidelity  `json:"fidelity"`
	// Text is the text of a text or thinking block.
	Text string `json:"text,omitempty"`
	// ID, Name and Input describe a tool_use block: the call's id (unique
	// within the run), the tool's name and its input as JSON.
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// ToolUseID, Content and IsError describe a tool_result block: the id
	// of the tool_use it answers, the result as text, and whether the tool
	// failed.
	ToolUseID string `json:"tool_use_id,omitempty"`
	Content   string `json:"content,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
}
