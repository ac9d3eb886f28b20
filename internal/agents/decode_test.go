package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agents/claude"
	"github.com/knotd/knotd/internal/agents/codex"
	"github.com/knotd/knotd/internal/agents/gemini"
	"github.com/knotd/knotd/internal/agents/kit"
	"github.com/knotd/knotd/internal/testutil"
	. "github.com/knotd/knotd/internal/transcript"
)

// normalizeCases are the fixtures under testdata/ and the format each is
// read as (see testdata/README.md).
var normalizeCases = []struct {
	name   string
	format Format
	file   string
}{
	{"claude-stream-json-new", claude.FormatStreamJSON, "claude/testdata/output/stream-json-new.jsonl"},
	{"claude-stream-json-tools", claude.FormatStreamJSON, "claude/testdata/output/stream-json-tools.jsonl"},
	{"claude-stream-json-cut", claude.FormatStreamJSON, "claude/testdata/output/stream-json-cut.jsonl"},
	{"claude-json-new-session", claude.FormatJSON, "claude/testdata/output/json-new-session.json"},
	{"claude-json-resume", claude.FormatJSON, "claude/testdata/output/json-resume.json"},
	{"claude-text", kit.FormatText, "claude/testdata/output/text.out"},
	{"codex-exec-new", codex.FormatJSON, "codex/testdata/output/exec-new.jsonl"},
	{"codex-exec-tools", codex.FormatJSON, "codex/testdata/output/exec-tools.jsonl"},
	{"codex-exec-turn-failed", codex.FormatJSON, "codex/testdata/output/exec-turn-failed.jsonl"},
	{"gemini-json-new", gemini.FormatJSON, "gemini/testdata/output/json-new.json"},
	{"gemini-json-error", gemini.FormatJSON, "gemini/testdata/output/json-error.json"},
	{"gemini-stream-json-tools", gemini.FormatStreamJSON, "gemini/testdata/output/stream-json-tools.jsonl"},
	{"gemini-stream-json-cut", gemini.FormatStreamJSON, "gemini/testdata/output/stream-json-cut.jsonl"},
	{"gemini-acp-new", gemini.FormatACP, "gemini/testdata/acp-output/acp-new.stdout"},
	{"gemini-acp-load", gemini.FormatACP, "gemini/testdata/acp-output/acp-load.stdout"},
	{"gemini-acp-http-401", gemini.FormatACP, "gemini/testdata/acp-output/acp-http-401.stdout"},
	{"gemini-acp-write-read-only", gemini.FormatACP, "gemini/testdata/acp-output/acp-write-read-only.stdout"},
	{"gemini-acp-write-edit", gemini.FormatACP, "gemini/testdata/acp-output/acp-write-edit.stdout"},
	{"gemini-acp-cut", gemini.FormatACP, "gemini/testdata/acp-output/acp-cut.stdout"},
}

func mustDecode(t testing.TB, format Format, file string) (AssistantMessage, *Usage) {
	t.Helper()
	in, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Decode(format, in)
	if err != nil {
		t.Fatalf("Decode(%s, %s) = %v", format, file, err)
	}
	return d.Message, d.Usage
}

func TestDecode_Golden(t *testing.T) {
	for _, tc := range normalizeCases {
		t.Run(tc.name, func(t *testing.T) {
			in, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			d, err := Decode(tc.format, in)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			enc := json.NewEncoder(&out)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(struct {
				Message AssistantMessage `json:"message"`
				Usage   *Usage           `json:"usage"`
				Reply   string           `json:"reply"`
				Handle  string           `json:"handle"`
				Failure string           `json:"failure"`
				Ended   bool             `json:"ended"`
			}{d.Message, d.Usage, d.Reply, d.Handle, d.Failure, d.Ended}); err != nil {
				t.Fatal(err)
			}
			testutil.Golden(t, filepath.Join("testdata", "decode", tc.name+".golden"), out.Bytes())
		})
	}
}

func TestDecode_ClaudeRealStreamJSON(t *testing.T) {
	msg, usage := mustDecode(t, claude.FormatStreamJSON, "claude/testdata/output/stream-json-new.jsonl")
	want := []Block{{Type: BlockText, Fidelity: Native, Text: "MOCK REPLY (user messages seen: 1)"}}
	if !reflect.DeepEqual(msg.Blocks, want) || len(msg.Notes) != 0 {
		t.Errorf("blocks = %+v, notes %q; want %+v and no notes", msg.Blocks, msg.Notes, want)
	}
	if usage == nil || *usage != (Usage{InputTokens: 10, OutputTokens: 8, CostUSD: 0.00019999999999999998}) {
		t.Errorf("usage = %+v", usage)
	}
	// The json format's single result object gives the same text, but
	// only as text-only.
	msg, _ = mustDecode(t, claude.FormatJSON, "claude/testdata/output/json-new-session.json")
	if len(msg.Blocks) != 1 || msg.Blocks[0].Fidelity != TextOnly || msg.Blocks[0].Text != want[0].Text {
		t.Errorf("claude-json blocks = %+v", msg.Blocks)
	}
}

func TestDecode_KeepsToolUseWithoutResult(t *testing.T) {
	for _, tc := range []struct {
		format Format
		file   string
		id     string
	}{
		{claude.FormatStreamJSON, "claude/testdata/output/stream-json-cut.jsonl", "toolu_11A"},
		{codex.FormatJSON, "codex/testdata/output/exec-tools.jsonl", "item_9"},
		{gemini.FormatStreamJSON, "gemini/testdata/output/stream-json-cut.jsonl", "run_shell_command-1763753407400-1"},
	} {
		t.Run(string(tc.format), func(t *testing.T) {
			msg, _ := mustDecode(t, tc.format, tc.file)
			var use, result bool
			for _, b := range msg.Blocks {
				use = use || b.Type == BlockToolUse && b.ID == tc.id
				result = result || b.Type == BlockToolResult && b.ToolUseID == tc.id
			}
			if !use || result {
				t.Errorf("tool_use %s recorded: %v, with a result: %v; want recorded without result (%+v)", tc.id, use, result, msg.Blocks)
			}
		})
	}
}

func TestDecode_UnknownFormat(t *testing.T) {
	if _, err := Decode("claude-xml", []byte("x")); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("Decode(claude-xml) = %v; want ErrUnknownFormat", err)
	}
	if _, err := NewDecoder("claude-xml"); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("NewDecoder(claude-xml) = %v; want ErrUnknownFormat", err)
	}
}

func TestDecode_Odd(t *testing.T) {
	for _, tc := range []struct {
		name      string
		format    Format
		in        string
		blocks    []Block
		noteCount int
	}{
		{"text blank", kit.FormatText, " \n\t\n", []Block{}, 0},
		{"text invalid utf-8", kit.FormatText, "a\xffb", []Block{{Type: BlockText, Fidelity: TextOnly, Text: "a\uFFFDb"}}, 0},
		{"no JSON kept as text", codex.FormatJSON, "Error: not logged in\n", []Block{{Type: BlockText, Fidelity: TextOnly, Text: "Error: not logged in\n"}}, 2},
		{"empty JSON format", claude.FormatJSON, "", []Block{}, 0},
		{"claude string content and unknown blocks", claude.FormatStreamJSON,
			`{"type":"user","message":{"content":"the prompt"}}` + "\n" +
				`{"type":"assistant","message":{"content":[{"type":"image"},{"type":"mcp_tool_use","id":"m1","name":"notes","input":"oops"}]}}` + "\n" +
				`{"type":"control_request"}` + "\n" +
				`{"type":"result","subtype":"error_max_turns","is_error":true,"result":""}`,
			[]Block{{Type: BlockToolUse, Fidelity: Reconstructed, ID: "m1", Name: "notes", Input: json.RawMessage("{}")}}, 3},
		{"claude tool result with an image", claude.FormatStreamJSON,
			`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"see"},{"type":"image","source":{"type":"base64"}}]}]}}`,
			[]Block{{Type: BlockToolResult, Fidelity: Reconstructed, ToolUseID: "t1", Content: "see\n{\"source\":{\"type\":\"base64\"},\"type\":\"image\"}"}}, 0},
		{"codex unknown item and event", codex.FormatJSON,
			`{"type":"item.completed","item":{"id":"c1","type":"collab_tool_call","tool":"spawn_agent","status":"completed"}}` + "\n" +
				`{"type":"item.completed","item":{"type":"agent_message","text":"no id"}}` + "\n" +
				`{"type":"item.completed"}` + "\n" +
				`{"type":"request_user_input","id":"x"}` + "\n" +
				`{"type":"error","message":"stream closed"}`,
			[]Block{
				{Type: BlockToolUse, Fidelity: Reconstructed, ID: "c1", Name: "collab_tool_call", Input: json.RawMessage(`{"status":"completed","tool":"spawn_agent"}`)},
				{Type: BlockToolResult, Fidelity: Reconstructed, ToolUseID: "c1", Content: "completed"},
				{Type: BlockText, Fidelity: Native, Text: "no id"},
			}, 2},
		{"codex declined command", codex.FormatJSON,
			`{"type":"item.completed","item":{"id":"i1","type":"command_execution","command":"rm -rf /","aggregated_output":"","exit_code":null,"status":"declined"}}`,
			[]Block{
				{Type: BlockToolUse, Fidelity: Reconstructed, ID: "i1", Name: "command_execution", Input: json.RawMessage(`{"command":"rm -rf /"}`)},
				{Type: BlockToolResult, Fidelity: Reconstructed, ToolUseID: "i1", Content: "declined", IsError: true},
			}, 0},
		{"gemini result error and unknown event", gemini.FormatStreamJSON,
			`{"type":"message","role":"assistant","content":"whole"}` + "\n" +
				`{"type":"message","role":"assistant","content":"second"}` + "\n" +
				`{"type":"thought","content":"x"}` + "\n" +
				`{"type":"result","status":"error","error":{"type":"quota","message":"quota exceeded"}}`,
			[]Block{{Type: BlockText, Fidelity: Native, Text: "whole"}, {Type: BlockText, Fidelity: Native, Text: "second"}}, 2},
		{"json after a banner", gemini.FormatJSON, "Loaded cached credentials.\n{\n  \"response\": \"hi\"\n}\n",
			[]Block{{Type: BlockText, Fidelity: TextOnly, Text: "hi"}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decode(tc.format, []byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			msg := d.Message
			if !reflect.DeepEqual(msg.Blocks, tc.blocks) {
				t.Errorf("Decode(%s, %q) blocks =\n%+v\nwant\n%+v", tc.format, tc.in, msg.Blocks, tc.blocks)
			}
			if len(msg.Notes) != tc.noteCount {
				t.Errorf("Decode(%s, %q) notes = %q; want %d", tc.format, tc.in, msg.Notes, tc.noteCount)
			}
			if msg.Format != tc.format {
				t.Errorf("Format = %q; want %q", msg.Format, tc.format)
			}
		})
	}
}

func TestJSONValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []string
		bad  int
	}{
		{"empty", "", nil, 0},
		{"lines", "{\"a\":1}\n{\"b\":2}\n", []string{`{"a":1}`, `{"b":2}`}, 0},
		{"pretty", "{\n  \"a\": 1\n}\n", []string{"{\n  \"a\": 1\n}"}, 0},
		{"text between lines", "{\"a\":1}\nhello\n{\"b\":2}", []string{`{"a":1}`, `{"b":2}`}, 1},
		{"pretty after text", "banner\n{\n \"a\": [1,\n 2]\n} tail\n", []string{"{\n \"a\": [1,\n 2]\n}"}, 2},
		{"broken object", "{\"a\":\n", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vals, bad := kit.JSONValues([]byte(tc.in))
			var got []string
			for _, v := range vals {
				got = append(got, string(v))
			}
			if !reflect.DeepEqual(got, tc.want) || bad != tc.bad {
				t.Errorf("kit.JSONValues(%q) = %q, %d; want %q, %d", tc.in, got, bad, tc.want, tc.bad)
			}
		})
	}
}

func TestJSONValues_HostileOutputStaysLinear(t *testing.T) {
	// Every line opens an array that the next line continues: a decoder
	// started at each line would read to the end every time.
	in := []byte("x\n" + strings.Repeat("{\"a\":[\n", 50_000))
	vals, bad := kit.JSONValues(in)
	if len(vals) != 0 || bad != 50_001 {
		t.Errorf("kit.JSONValues(hostile) = %d values, %d bad; want 0, 50001", len(vals), bad)
	}
}

func FuzzDecode(f *testing.F) {
	for _, tc := range normalizeCases {
		in, err := os.ReadFile(tc.file)
		if err != nil {
			f.Fatal(err)
		}
		for i, format := range Formats() {
			if format == tc.format {
				f.Add(uint8(i), in)
			}
		}
	}
	f.Add(uint8(1), []byte(`{"type":"assistant","message":{"content":[{"type":"tool_use","input":[1]}]}}`))
	f.Add(uint8(3), []byte(`{"type":"item.completed","item":{"id":"1","type":"mcp_tool_call","arguments":null,"result":{"content":"x"}}}`))
	all := Formats()
	f.Fuzz(func(t *testing.T, which uint8, in []byte) {
		format := all[int(which)%len(all)]
		d, err := Decode(format, in)
		if err != nil {
			t.Fatalf("Decode(%s) = %v", format, err)
		}
		msg := d.Message
		if msg.Blocks == nil || msg.Format != format {
			t.Fatalf("Decode(%s) = %+v", format, msg)
		}
		for _, b := range msg.Blocks {
			switch b.Type {
			case BlockText, BlockThinking, BlockToolResult:
			case BlockToolUse:
				if len(b.Input) == 0 || b.Input[0] != '{' || !json.Valid(b.Input) {
					t.Fatalf("tool_use input %q is not a JSON object", b.Input)
				}
			default:
				t.Fatalf("block type %q", b.Type)
			}
			if b.Fidelity != Native && b.Fidelity != Reconstructed && b.Fidelity != TextOnly {
				t.Fatalf("fidelity %q", b.Fidelity)
			}
		}
		if _, err := json.Marshal(msg); err != nil {
			t.Fatalf("the message cannot be recorded: %v", err)
		}
	})
}

// TestDecoder_LinesMatchDecode feeds each JSON-lines fixture line by line:
// the blocks handed out as lines arrive are the message's blocks in order,
// and Finish gives what Decode gives for the whole output.
func TestDecoder_LinesMatchDecode(t *testing.T) {
	for _, tc := range normalizeCases {
		if !strings.HasSuffix(tc.file, ".jsonl") {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			in, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Decode(tc.format, in)
			if err != nil {
				t.Fatal(err)
			}
			d, err := NewDecoder(tc.format)
			if err != nil {
				t.Fatal(err)
			}
			var live []Block
			for _, line := range bytes.Split(in, []byte("\n")) {
				live = append(live, d.Line(line)...)
			}
			got := d.Finish(in)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("line by line:\n%+v\nwhole:\n%+v", got, want)
			}
			if len(live) > len(got.Message.Blocks) || len(live) > 0 && !reflect.DeepEqual(live, got.Message.Blocks[:len(live)]) {
				t.Errorf("blocks handed out live %+v are not a prefix of the message's %+v", live, got.Message.Blocks)
			}
		})
	}
}

// TestDecoder_BlocksAsTheyArrive checks which blocks each line makes final.
func TestDecoder_BlocksAsTheyArrive(t *testing.T) {
	for _, tc := range []struct {
		name   string
		format Format
		lines  []string
		want   []int // blocks handed out by each line
	}{
		{"claude: each message at once", claude.FormatStreamJSON, []string{
			`{"type":"system","subtype":"init"}`,
			`{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"hm"},{"type":"tool_use","id":"t1","name":"Read","input":{}}]}}`,
			`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}}`,
			`{"type":"assistant","message":{"content":[{"type":"text","text":"done"}]}}`,
			`{"type":"result","result":"done","session_id":"s"}`,
		}, []int{0, 2, 1, 1, 0}},
		{"codex: an item once it and those before it completed", codex.FormatJSON, []string{
			`{"type":"thread.started","thread_id":"th"}`,
			`{"type":"item.started","item":{"id":"a","type":"command_execution","command":"ls","status":"in_progress"}}`,
			`{"type":"item.completed","item":{"id":"b","type":"reasoning","text":"why"}}`,
			`{"type":"item.completed","item":{"id":"a","type":"command_execution","command":"ls","aggregated_output":"x","exit_code":0,"status":"completed"}}`,
			`{"type":"item.completed","item":{"id":"c","type":"agent_message","text":"ok"}}`,
			`{"type":"turn.completed","usage":{"input_tokens":1}}`,
		}, []int{0, 0, 1, 2, 1, 0}},
		{"gemini: a text once its deltas end", gemini.FormatStreamJSON, []string{
			`{"type":"init","session_id":"s"}`,
			`{"type":"message","role":"assistant","content":"a","delta":true}`,
			`{"type":"message","role":"assistant","content":"b","delta":true}`,
			`{"type":"tool_use","tool_id":"t","tool_name":"ls","parameters":{}}`,
			`{"type":"result","status":"success"}`,
		}, []int{0, 0, 0, 2, 0}},
		{"gemini ACP: a text once its chunks end", gemini.FormatACP, []string{
			`{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s"}}`,
			`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"hm"}}}}`,
			`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}}}`,
			`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"b"}}}}`,
			`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`,
		}, []int{0, 0, 1, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := NewDecoder(tc.format)
			if err != nil {
				t.Fatal(err)
			}
			for i, line := range tc.lines {
				if got := len(d.Line([]byte(line))); got != tc.want[i] {
					t.Errorf("line %d handed out %d blocks; want %d", i+1, got, tc.want[i])
				}
			}
			if !d.Finish(nil).Ended {
				t.Error("Ended = false after the closing event")
			}
		})
	}
}

// TestDecode_GeminiACPContext: Gemini CLI 0.61.0 sends no usage_update,
// so a turn's context is the input tokens of its prompt response's
// _meta.quota.token_count, its model calls summed (acp-write-edit: two
// calls of 100); no size is reported.
func TestDecode_GeminiACPContext(t *testing.T) {
	for _, tc := range []struct {
		file string
		want int64
	}{
		{"gemini/testdata/acp-output/acp-new.stdout", 100},
		{"gemini/testdata/acp-output/acp-write-edit.stdout", 200},
	} {
		in, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Decode(gemini.FormatACP, in)
		if err != nil {
			t.Fatal(err)
		}
		if d.ContextTokens != tc.want || d.ContextWindow != 0 {
			t.Errorf("%s: context %d of %d tokens; want %d, no size", tc.file, d.ContextTokens, d.ContextWindow, tc.want)
		}
	}
}
