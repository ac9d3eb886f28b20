package claude

import (
	"os"
	"path/filepath"
	"testing"

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
