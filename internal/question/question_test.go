package question

import (
	"encoding/json"
	"testing"
)

// TestCall_Hash: the hash binds the tool and its input exactly: key order
// and insignificant space do not change it; any other value does, numbers
// included, which are compared as written (never through float64).
func TestCall_Hash(t *testing.T) {
	h := func(tool, input string) string { return Call{Tool: tool, Input: json.RawMessage(input)}.Hash() }
	base := h("Write", `{"file_path":"a.md","content":"x"}`)
	for _, tt := range []struct {
		name, tool, input string
		same              bool
	}{
		{"key order and space", "Write", ` { "content" : "x", "file_path":"a.md" }`, true},
		{"another value", "Write", `{"file_path":"b.md","content":"x"}`, false},
		{"another tool", "Edit", `{"file_path":"a.md","content":"x"}`, false},
	} {
		if got := h(tt.tool, tt.input); (got == base) != tt.same {
			t.Errorf("%s: same hash %v; want %v", tt.name, got == base, tt.same)
		}
	}
	for _, pair := range [][2]string{
		{`{"n":9007199254740993}`, `{"n":9007199254740992}`},
		{`{"n":1.0}`, `{"n":1}`},
		{`{"n":1e2}`, `{"n":100}`},
	} {
		if h("mcp", pair[0]) == h("mcp", pair[1]) {
			t.Errorf("%s and %s hash the same", pair[0], pair[1])
		}
	}
	if h("mcp", `{"n":9007199254740993}`) != h("mcp", `{ "n": 9007199254740993 }`) {
		t.Error("the same number hashes differently")
	}
}
