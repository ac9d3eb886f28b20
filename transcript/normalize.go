package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Format names an agent CLI's output format, as a Decoder reads it.
type Format string

// The formats a Decoder reads.
const (
	// FormatText is plain text: all of it is the reply.
	FormatText Format = "text"
	// FormatClaudeJSON is `claude -p --output-format json`: one result
	// object with the final reply only.
	FormatClaudeJSON Format = "claude-json"
	// FormatClaudeStreamJSON is `claude -p --output-format stream-json
	// --verbose`: one JSON event per line, with every content block.
	FormatClaudeStreamJSON Format = "claude-stream-json"
	// FormatCodexJSON is `codex exec --json`: thread, turn and item events.
	FormatCodexJSON Format = "codex-json"
	// FormatGeminiJSON is `gemini --output-format json`: one object with
	// the final response only.
	FormatGeminiJSON Format = "gemini-json"
	// FormatGeminiStreamJSON is `gemini --output-format stream-json`:
	// init, message, tool_use, tool_result, error and result events.
	FormatGeminiStreamJSON Format = "gemini-stream-json"
	// FormatGeminiACP is `gemini --acp`: the agent's side of an Agent
	// Client Protocol conversation, JSON-RPC 2.0 messages, one a line.
	FormatGeminiACP Format = "gemini-acp"
	// FormatACP is any agent speaking the Agent Client Protocol on its
	// standard output, as knotd's generic ACP client hands it the lines of
	// the prompt turn: session/update notifications and the prompt's
	// response (usage from its usage field and usage_update).
	FormatACP Format = "acp"
)

// formats lists every format a Decoder reads.
func formats() []Format {
	return []Format{FormatText, FormatClaudeJSON, FormatClaudeStreamJSON, FormatCodexJSON, FormatGeminiJSON, FormatGeminiStreamJSON, FormatGeminiACP, FormatACP}
}

// ErrUnknownFormat is returned by NewDecoder and Decode for a format they
// do not read.
var ErrUnknownFormat = errors.New("transcript: unknown output format")

// normalizer reads one CLI's JSON events, in order. The Claude normaliser
// reads both Claude formats (the json result object is the last line of
// stream-json), and the Gemini one both Gemini formats.
type normalizer interface {
	event(obj map[string]json.RawMessage)
	// final returns the blocks that can no longer change, in order: a
	// prefix of the message's blocks that only grows.
	final() []Block
	// finish returns what the output held: every block, in order, the
	// notes, and the run's reply, handle, usage, failure and end.
	finish() Decoded
}

// maxMultiline bounds the attempts to decode a JSON value that spans lines
// after a line that is not JSON, which keeps hostile output linear.
const maxMultiline = 16

// jsonValues returns the JSON values in b: JSON lines, pretty-printed
// documents, or both with other text between them; bad counts the lines
// that are neither.
func jsonValues(b []byte) (vals []json.RawMessage, bad int) {
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var v json.RawMessage
		err := dec.Decode(&v)
		if err == io.EOF {
			return vals, 0
		}
		if err != nil {
			break // not pure JSON: go line by line
		}
		vals = append(vals, v)
	}
	vals = vals[:0]
	multi := 0
	for off := 0; off < len(b); {
		end := bytes.IndexByte(b[off:], '\n')
		if end < 0 {
			end = len(b)
		} else {
			end += off
		}
		line := bytes.TrimSpace(b[off:end])
		switch {
		case len(line) == 0:
		case json.Valid(line):
			vals = append(vals, json.RawMessage(line))
		case (line[0] == '{' || line[0] == '[') && multi < maxMultiline:
			multi++
			d := json.NewDecoder(bytes.NewReader(b[off:]))
			var v json.RawMessage
			if d.Decode(&v) == nil {
				vals = append(vals, v)
				off += int(d.InputOffset())
				continue
			}
			bad++
		default:
			bad++
		}
		off = end + 1
	}
	return vals, bad
}

// str returns obj[key] as a string, "" when absent or not a string.
func str(obj map[string]json.RawMessage, key string) string {
	var s string
	if raw, ok := obj[key]; ok {
		_ = json.Unmarshal(raw, &s) // not a string: ""
	}
	return s
}

// object returns obj[key] as an object, nil when absent or not an object.
func object(obj map[string]json.RawMessage, key string) map[string]json.RawMessage {
	var o map[string]json.RawMessage
	if raw, ok := obj[key]; ok {
		_ = json.Unmarshal(raw, &o) // not an object: nil
	}
	return o
}

// integer returns obj[key] as an int64, 0 when absent or not a number.
func integer(obj map[string]json.RawMessage, key string) int64 {
	var f float64
	if raw, ok := obj[key]; ok {
		_ = json.Unmarshal(raw, &f) // not a number: 0
	}
	return int64(f)
}

// number returns obj[key] as a float64, 0 when absent or not a number.
func number(obj map[string]json.RawMessage, key string) float64 {
	var f float64
	if raw, ok := obj[key]; ok {
		_ = json.Unmarshal(raw, &f) // not a number: 0
	}
	return f
}

// boolean returns obj[key] as a bool, false when absent or not a bool.
func boolean(obj map[string]json.RawMessage, key string) bool {
	var b bool
	if raw, ok := obj[key]; ok {
		_ = json.Unmarshal(raw, &b) // not a bool: false
	}
	return b
}

// rawObject returns raw when it is a JSON object, else "{}": a tool_use's
// input is always an object.
func rawObject(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' && json.Valid(raw) {
		return compact(raw)
	}
	return json.RawMessage("{}")
}

// compact returns valid JSON without insignificant space.
func compact(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}

// mustJSON encodes a value built from strings, maps and slices, which
// cannot fail.
func mustJSON(v any) json.RawMessage {
	b, err := marshalNoEscape(v)
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

// flatten turns tool-result content into text: a string as is, a list of
// content blocks as their texts joined by newlines (other blocks as their
// JSON). exact is false when anything but a string or text blocks was
// flattened.
func flatten(raw json.RawMessage) (text string, exact bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var parts []map[string]json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return string(compact(raw)), false
	}
	exact = true
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if str(p, "type") == "text" {
			texts = append(texts, str(p, "text"))
			continue
		}
		exact = false
		texts = append(texts, string(mustJSON(p)))
	}
	return strings.Join(texts, "\n"), exact
}

// noteCounts formats a count of skipped things for Notes, in a stable order.
func noteCounts(what string, counts map[string]int) []string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	notes := make([]string, 0, len(keys))
	for _, k := range keys {
		notes = append(notes, fmt.Sprintf("skipped %d %s of type %q", counts[k], what, k))
	}
	return notes
}
