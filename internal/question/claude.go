package question

import (
	"encoding/json"
	"path/filepath"
	"strings"
)

// FromClaude returns the call Claude Code asks to make with tool and its
// input (a PreToolUse hook's tool_name and tool_input), as knotd shows it:
// Write, Edit, MultiEdit and NotebookEdit are edits of the file they name,
// Bash a command, WebFetch and WebSearch fetches, any other tool other.
//
// An edit's Path is made relative to vaultRoot (slash-separated) when the
// file lies inside it, judged on the cleaned paths (a relative path is
// taken from vaultRoot, where the agent runs); otherwise Path is the path
// as the agent gave it and Outside is set, as it is when vaultRoot is "".
// Input that does not decode leaves the fields it would have given empty:
// the call is then shown by its tool and input, and is bound to them all
// the same (Hash).
func FromClaude(tool string, input json.RawMessage, vaultRoot string) Call {
	c := Call{Tool: tool, Kind: KindOther, Input: input}
	var in struct {
		FilePath     any `json:"file_path"`
		NotebookPath any `json:"notebook_path"`
		Command      any `json:"command"`
		URL          any `json:"url"`
	}
	if json.Unmarshal(input, &in) != nil {
		in.FilePath, in.NotebookPath, in.Command, in.URL = nil, nil, nil, nil
	}
	str := func(v any) string { s, _ := v.(string); return s }
	switch tool {
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
		c.Kind = KindEdit
		p := str(in.FilePath)
		if tool == "NotebookEdit" {
			p = str(in.NotebookPath)
		}
		c.Path, c.Outside = vaultPath(p, vaultRoot)
	case "Bash":
		c.Kind = KindCommand
		c.Command = str(in.Command)
	case "WebFetch":
		c.Kind = KindFetch
		c.URL = str(in.URL)
	case "WebSearch":
		c.Kind = KindFetch
	}
	return c
}

// vaultPath returns p relative to root, slash-separated, when it lies
// inside root; else p as it is, and outside.
func vaultPath(p, root string) (string, bool) {
	if p == "" {
		return "", false
	}
	if root == "" {
		return p, true
	}
	root = filepath.Clean(root)
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(root, abs)
	}
	rel, err := filepath.Rel(root, filepath.Clean(abs))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return p, true
	}
	return filepath.ToSlash(rel), false
}
