package acp

import (
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agents/kit"
	"github.com/knotd/knotd/internal/transcript"
)

// TestDecode_ACP: the generic ACP format reads a prompt turn of any ACP
// agent: the reply from agent_message_chunk updates, a plan as a thinking
// block, tool calls, the turn's tokens from the response's usage and the
// cost from usage_update; a user_message_chunk is skipped, not taken for
// a replay that would hide the rest.
func TestDecode_ACP(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"the prompt"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[{"content":"Read","priority":"high","status":"pending"}]}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read a","kind":"read","status":"completed","content":[{"type":"content","content":{"type":"text","text":"A"}}]}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":10,"size":100,"cost":{"amount":0.5,"currency":"USD"}}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"fs/write_text_file","params":{"sessionId":"s","path":"/v/a.md","content":"x"}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hel"}}}}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"lo"}}}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn","usage":{"inputTokens":7,"outputTokens":3,"cachedReadTokens":2,"totalTokens":10}}}`,
	}, "\n")
	d := kit.Decode(Format, NewNormalizer("ACP agent", true), []byte(in))
	if d.Reply != "Hello" || !d.Ended {
		t.Errorf("reply %q, ended %v; want Hello, ended", d.Reply, d.Ended)
	}
	if u := d.Usage; u == nil || *u != (transcript.Usage{InputTokens: 7, OutputTokens: 3, CacheReadTokens: 2, CostUSD: 0.5}) {
		t.Errorf("usage = %+v; want 7 in, 3 out, 2 cached, $0.5", u)
	}
	if d.ContextTokens != 10 || d.ContextWindow != 100 {
		t.Errorf("context = %d of %d tokens; want usage_update's used 10 of size 100", d.ContextTokens, d.ContextWindow)
	}
	var got []string
	for _, b := range d.Message.Blocks {
		got = append(got, string(b.Type)+":"+b.Text+b.Content)
	}
	if notes := strings.Join(d.Message.Notes, "\n"); strings.Contains(notes, "fs/") {
		t.Errorf("notes = %q; want none of the file system call (knotd's client records it)", d.Message.Notes)
	}
	want := []string{"thinking:Plan:\n- [pending] Read", "tool_use:", "tool_result:A", "text:Hello"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("blocks = %q; want %q", got, want)
	}
}
