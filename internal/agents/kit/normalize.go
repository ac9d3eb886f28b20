package kit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/knotd/knotd/internal/transcript"
)

// FormatText is plain text: all of it is the reply (a generic command,
// llm, ollama). Each agent's package names its own formats; the values
// are written in transcripts and must never change.
const FormatText = transcript.FormatText

// Normalizer reads one CLI's JSON events, in order. The Claude normaliser
// reads both Claude formats (the json result object is the last line of
// stream-json), and the Gemini one both Gemini formats.
type Normalizer interface {
	Event(obj map[string]json.RawMessage)
	// Final returns the blocks that can no longer change, in order: a
	// prefix of the message's blocks that only grows.
	Final() []transcript.Block
	// Finish returns what the output held: every block, in order, the
	// notes, and the run's reply, handle, usage, failure and end.
	Finish() Decoded
}

// maxMultiline bounds the attempts to decode a JSON value that spans lines
// after a line that is not JSON, which keeps hostile output linear.
const maxMultiline = 16

// JSONValues returns the JSON values in b: JSON lines, pretty-printed
// documents, or both with other text between them; bad counts the lines
// that are neither.
func JSONValues(b []byte) (vals []json.RawMessage, bad int) {
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

// Str returns obj[key] as a string, "" when absent or not a string.
func Str(obj map[string]json.RawMessage, key string) string {
	var s string
	if raw, ok := obj[key]; ok {
		_ = json.Unmarshal(raw, &s) // not a string: ""
	}
	return s
}

// Object returns obj[key] as an object, nil when absent or not an object.
func Object(obj map[string]json.RawMessage, key string) map[string]json.RawMessage {
	var o map[string]json.RawMessage
	if raw, ok := obj[key]; ok {
		_ = json.Unmarshal(raw, &o) // not an object: nil
	}
	return o
}

// Integer returns obj[key] as an int64, 0 when absent or not a number.
func Integer(obj map[string]json.RawMessage, key string) int64 {
	var f float64
	if raw, ok := obj[key]; ok {
		_ = json.Unmarshal(raw, &f) // not a number: 0
	}
	return int64(f)
}

// Number returns obj[key] as a float64, 0 when absent or not a number.
func Number(obj map[string]json.RawMessage, key string) float64 {
	var f float64
	if raw, ok := obj[key]; ok {
		_ = json.Unmarshal(raw, &f) // not a number: 0
	}
	return f
}

// Boolean returns obj[key] as a bool, false when absent or not a bool.
func Boolean(obj map[string]json.RawMessage, key string) bool {
	var b bool
	if raw, ok := obj[key]; ok {
		_ = json.Unmarshal(raw, &b) // not a bool: false
	}
	return b
}

// RawObject returns raw when it is a JSON object, else "{}": a tool_use's
// input is always an object.
func RawObject(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' && json.Valid(raw) {
		return Compact(raw)
	}
	return json.RawMessage("{}")
}

// Compact returns valid JSON without insignificant space.
func Compact(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}

// MustJSON encodes a value built from strings, maps and slices, which
// cannot fail.
func MustJSON(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

// Flatten turns tool-result content into text: a string as is, a list of
// content blocks as their texts joined by newlines (other blocks as their
// JSON). exact is false when anything but a string or text blocks was
// flattened.
func Flatten(raw json.RawMessage) (text string, exact bool) {
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
		return string(Compact(raw)), false
	}
	exact = true
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if Str(p, "type") == "text" {
			texts = append(texts, Str(p, "text"))
			continue
		}
		exact = false
		texts = append(texts, string(MustJSON(p)))
	}
	return strings.Join(texts, "\n"), exact
}

// NoteCounts formats a count of skipped things for Notes, in a stable order.
func NoteCounts(what string, counts map[string]int) []string {
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

// TextBlock returns a text block, or false for blank text.
func TextBlock(t transcript.BlockType, text string, f transcript.Fidelity) (transcript.Block, bool) {
	if IsBlank(text) {
		return transcript.Block{}, false
	}
	return transcript.Block{Type: t, Fidelity: f, Text: text}, true
}

// IsBlank reports whether s holds only spaces, tabs and line ends.
func IsBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\r', '\n':
		default:
			return false
		}
	}
	return true
}
