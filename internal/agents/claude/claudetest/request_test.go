package claudetest

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/knotd/knotd/internal/agentrun/agenttest"
)

func TestRequest_ParseBody(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    Request
		wantErr bool
	}{
		{
			name: "string content and system",
			body: `{"model":"m","stream":true,"system":"be brief","messages":[{"role":"user","content":"hi"}]}`,
			want: Request{Model: "m", Stream: true, System: "be brief",
				Messages: []agenttest.Message{{Role: "user", Content: []agenttest.Block{{Type: "text", Text: "hi"}}}}},
		},
		{
			name: "blocks as Claude Code sends them",
			body: `{"model":"claude-opus-5-5","system":[{"type":"text","text":"a"},{"type":"text","text":"b","cache_control":{"type":"ephemeral"}}],
				"messages":[
				{"role":"user","content":[{"type":"text","text":"<system-reminder>\nx\n</system-reminder>\n"},{"type":"text","text":"prompt\n"}]},
				{"role":"system","content":"# Environment"},
				{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"ok"},{"type":"tool_use","id":"t1","name":"Bash","input":{}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"done"}]}]}`,
			want: Request{Model: "claude-opus-5-5", System: "a\nb", Messages: []agenttest.Message{
				{Role: "user", Content: []agenttest.Block{
					{Type: "text", Text: "<system-reminder>\nx\n</system-reminder>\n"},
					{Type: "text", Text: "prompt\n"}}},
				{Role: "system", Content: []agenttest.Block{{Type: "text", Text: "# Environment"}}},
				{Role: "assistant", Content: []agenttest.Block{{Type: "thinking"}, {Type: "text", Text: "ok"}, {Type: "tool_use", ID: "t1", Name: "Bash"}}},
				{Role: "user", Content: []agenttest.Block{{Type: "tool_result", ID: "t1", Text: "done"}}},
			}},
		},
		{
			name: "tool results, text or blocks, refused",
			body: `{"messages":[{"role":"user","content":[
				{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"x"},{"type":"image"},{"type":"text","text":"y"}]},
				{"type":"tool_result","tool_use_id":"b","is_error":true,"content":"denied"}]}]}`,
			want: Request{Messages: []agenttest.Message{{Role: "user", Content: []agenttest.Block{
				{Type: "tool_result", ID: "a", Text: "x\ny"},
				{Type: "tool_result", ID: "b", Text: "denied", IsError: true}}}}},
		},
		{name: "tool_result content a number", body: `{"messages":[{"role":"user","content":[{"type":"tool_result","content":1}]}]}`, wantErr: true},
		{
			name: "no system, null content",
			body: `{"model":"m","messages":[{"role":"user","content":null}]}`,
			want: Request{Model: "m", Messages: []agenttest.Message{{Role: "user"}}},
		},
		{
			name: "count_tokens body without stream",
			body: `{"model":"m","messages":[]}`,
			want: Request{Model: "m", Messages: []agenttest.Message{}},
		},
		{name: "not json", body: `{`, wantErr: true},
		{name: "messages not an array", body: `{"messages":{}}`, wantErr: true},
		{name: "content a number", body: `{"messages":[{"role":"user","content":3}]}`, wantErr: true},
		{name: "system a number", body: `{"system":3}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Request
			err := got.parseBody([]byte(tt.body))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseBody(%q) error = %v; want error %t", tt.body, err, tt.wantErr)
			}
			if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseBody(%q) = %+v; want %+v", tt.body, got, tt.want)
			}
		})
	}
}

func TestMessage_Prompt(t *testing.T) {
	tests := []struct {
		name       string
		msg        agenttest.Message
		text, want string
	}{
		{"one block", agenttest.Message{Role: "user", Content: []agenttest.Block{{Type: "text", Text: "hi\n"}}}, "hi\n", "hi\n"},
		{"reminder left out", agenttest.Message{Role: "user", Content: []agenttest.Block{
			{Type: "text", Text: "<system-reminder>\nrules\n</system-reminder>\n"},
			{Type: "text", Text: "## Event Context\nEvent: Created\n"}}},
			"<system-reminder>\nrules\n</system-reminder>\n\n## Event Context\nEvent: Created\n",
			"## Event Context\nEvent: Created\n"},
		{"non-text blocks left out", agenttest.Message{Role: "user", Content: []agenttest.Block{
			{Type: "tool_result"}, {Type: "text", Text: "a"}, {Type: "image"}, {Type: "text", Text: "b"}}},
			"a\nb", "a\nb"},
		{"no content", agenttest.Message{Role: "user"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.msg.Text(); got != tt.text {
				t.Errorf("Text() = %q; want %q", got, tt.text)
			}
			if got := tt.msg.Prompt(); got != tt.want {
				t.Errorf("Prompt() = %q; want %q", got, tt.want)
			}
		})
	}
}

func TestDefaultReply(t *testing.T) {
	r := Request{Messages: []agenttest.Message{{Role: "user"}, {Role: "system"}, {Role: "assistant"}, {Role: "user"}}}
	if got, want := DefaultReply(r), "MOCK REPLY (user messages seen: 2)"; got != want {
		t.Errorf("DefaultReply(%d messages, 2 user) = %q; want %q", len(r.Messages), got, want)
	}
}

// FuzzRequest_ParseBody checks that parseBody never panics and that what it
// accepts agrees with a plain decode on the roles and text it reports.
func FuzzRequest_ParseBody(f *testing.F) {
	f.Add([]byte(`{"model":"m","stream":true,"system":"s","messages":[{"role":"user","content":"hi"}]}`))
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"<system-reminder>x"},{"type":"text","text":"p"}]},{"role":"assistant","content":[{"type":"tool_use"}]}]}`))
	f.Add([]byte(`{"system":[{"type":"text","text":"a"}],"messages":null}`))
	f.Add([]byte(`{"messages":[{"content":"\u0000"}]}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var r Request
		if err := r.parseBody(body); err != nil {
			return
		}
		var plain struct {
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &plain); err != nil {
			t.Fatalf("parseBody(%q) accepted what json.Unmarshal rejects: %v", body, err)
		}
		if len(plain.Messages) != len(r.Messages) {
			t.Fatalf("parseBody(%q) has %d messages; want %d", body, len(r.Messages), len(plain.Messages))
		}
		for i, m := range plain.Messages {
			if r.Messages[i].Role != m.Role {
				t.Fatalf("parseBody(%q) messages[%d].Role = %q; want %q", body, i, r.Messages[i].Role, m.Role)
			}
		}
		for _, m := range r.Messages {
			for _, b := range m.Content {
				if b.Type != "text" && b.Text != "" {
					t.Fatalf("parseBody(%q): %s block has text %q", body, b.Type, b.Text)
				}
			}
		}
	})
}

func TestRequest_ToolResults(t *testing.T) {
	r := Request{Messages: []agenttest.Message{
		{Role: "user", Content: []agenttest.Block{{Type: "text", Text: "hi"}}},
		{Role: "assistant", Content: []agenttest.Block{{Type: "tool_use", ID: "a", Name: "Write"}}},
		{Role: "user", Content: []agenttest.Block{{Type: "tool_result", ID: "a", Text: "denied", IsError: true}}},
	}}
	want := []agenttest.ToolResult{{ID: "a", Output: "denied", IsError: true}}
	if got := r.ToolResults(); !reflect.DeepEqual(got, want) {
		t.Errorf("ToolResults() = %+v; want %+v", got, want)
	}
}
