package claude

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/knotd/knotd/internal/agents/kit"
)

// BenchmarkDecode measures the Claude decoder on the stream-json
// fixture with tools.
func BenchmarkDecode(b *testing.B) {
	in, err := os.ReadFile(filepath.Join("testdata", "output", "stream-json-tools.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for range b.N {
		kit.Decode(FormatStreamJSON, newNormalizer(), in)
	}
}

// TestClaudeParser_Context: the context size of a turn is its last model
// call's input (uncached, cache reads and cache writes), from the last
// assistant message's usage; the result's usage sums every call of the
// turn and would overstate it.
func TestClaudeParser_Context(t *testing.T) {
	rec, err := os.ReadFile(filepath.Join("testdata", "recorded", "stream-json-new.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	multi := `{"type":"system","subtype":"init","session_id":"s"}
{"type":"assistant","session_id":"s","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{}}],"usage":{"input_tokens":5,"cache_read_input_tokens":90000,"cache_creation_input_tokens":1000,"output_tokens":20}}}
{"type":"user","session_id":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}}
{"type":"assistant","session_id":"s","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"done"}],"usage":{"input_tokens":7,"cache_read_input_tokens":91000,"cache_creation_input_tokens":500,"output_tokens":30}}}
{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s","usage":{"input_tokens":12,"cache_read_input_tokens":181000,"cache_creation_input_tokens":1500,"output_tokens":50}}
`
	for _, tt := range []struct {
		name string
		out  []byte
		want int64
	}{
		{"recorded", rec, 10},
		{"two model calls", []byte(multi), 7 + 91000 + 500},
		{"json output", []byte(`{"type":"result","result":"r","session_id":"s","usage":{"input_tokens":10}}`), 0},
	} {
		p, err := newParser().Finish(tt.out, false, "")
		if err != nil || p.Context != tt.want {
			t.Errorf("%s: context = %d, %v; want %d", tt.name, p.Context, err, tt.want)
		}
	}
}

// TestClaudeParser_Held: a turn the real CLI ended with tool_deferred
// (testdata/ask, recorded) holds its call: tool, input, tool_use id and
// the text before it; the turn that continues it, answered, holds none,
// and so does one that ends otherwise.
func TestClaudeParser_Held(t *testing.T) {
	for _, tt := range []struct {
		file     string
		wantTool string // "" for none held
		wantID   string
		wantWhy  string
	}{
		{"write-approved.turn1.jsonl", "Write", "toolu_ask_write", "I would like to do this."},
		{"write-approved.turn2.jsonl", "", "", ""},
		{"write-denied.turn2.jsonl", "", "", ""},
		// Held again on resume: the CLI prints no message before it.
		{"approval-of-another-call.turn2.jsonl", "Write", "toolu_ask_write", ""},
		{"command-denied.turn1.jsonl", "Bash", "toolu_ask_bash", "I would like to do this."},
		{"command-approved.turn2.jsonl", "", "", ""},
	} {
		out, err := os.ReadFile(filepath.Join("testdata", "ask", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		p, err := newParser().Finish(out, false, "")
		if err != nil || p.AgentErr != "" {
			t.Fatalf("%s: %v, agent error %q", tt.file, err, p.AgentErr)
		}
		if tt.wantTool == "" {
			if p.Held != nil || p.Reply == "" {
				t.Errorf("%s: held %+v, reply %q; want none held and a reply", tt.file, p.Held, p.Reply)
			}
			continue
		}
		if len(p.Held) != 1 || p.Reply != "" || p.Handle != "11111111-2222-4333-8444-555555555555" {
			t.Fatalf("%s: held %+v, reply %q, handle %q; want one call held, no reply, the session", tt.file, p.Held, p.Reply, p.Handle)
		}
		c := p.Held[0]
		if c.Tool != tt.wantTool || c.ToolUseID != tt.wantID || c.Why != tt.wantWhy || !json.Valid(c.Input) || len(c.Input) < 10 {
			t.Errorf("%s: held %+v; want %s %s with its input and why", tt.file, c, tt.wantTool, tt.wantID)
		}
	}
	// Why is bounded, and what came before the turn's last tool result is
	// not part of it.
	long := strings.Repeat("é", MaxWhy)
	out := `{"type":"assistant","session_id":"s","message":{"content":[{"type":"text","text":"old"},{"type":"tool_use","id":"t0","name":"Read","input":{}}]}}
{"type":"user","session_id":"s","message":{"content":[{"type":"tool_result","tool_use_id":"t0","content":"x"}]}}
{"type":"assistant","session_id":"s","message":{"content":[{"type":"text","text":"` + long + `"}]}}
{"type":"assistant","session_id":"s","message":{"content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}
{"type":"result","subtype":"success","is_error":false,"result":"","session_id":"s","stop_reason":"tool_deferred","deferred_tool_use":{"id":"t1","name":"Bash","input":{"command":"ls"}}}
`
	p, err := newParser().Finish([]byte(out), false, "")
	if err != nil || len(p.Held) != 1 {
		t.Fatalf("held %+v, %v", p.Held, err)
	}
	if w := p.Held[0].Why; len(w) > MaxWhy || !utf8.ValidString(w) || !strings.HasSuffix(w, "…") || strings.Contains(w, "old") {
		t.Errorf("why %d bytes %q…; want it cut at %d bytes, valid, marked, without the earlier text", len(w), w[:20], MaxWhy)
	}
}
