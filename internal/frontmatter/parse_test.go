package frontmatter

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

const testID = "0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21"

func TestParse(t *testing.T) {
	tests := []struct {
		name   string
		src    string
		fields Fields // compared without Problems
		body   string
		block  string // the block's bytes
		bom    bool
		crlf   bool
	}{
		{
			name: "parse_no_frontmatter",
			src:  "# Title\n\nSome text.\n",
			body: "# Title\n\nSome text.\n",
		},
		{
			name: "parse_all_fields",
			src: "---\nknot_session: " + testID + "\nknot_resume: sess-42\nknot_mode: replace\n" +
				"knot_agent: claude\nknot_model: claude-sonnet-4\nknot_events: [created, modified]\ntitle: x\n---\nBody\n",
			fields: Fields{Session: testID, Resume: "sess-42", Mode: ModeReplace, Agent: "claude",
				Model: "claude-sonnet-4", Events: []string{"created", "modified"}},
			body: "Body\n",
			block: "---\nknot_session: " + testID + "\nknot_resume: sess-42\nknot_mode: replace\n" +
				"knot_agent: claude\nknot_model: claude-sonnet-4\nknot_events: [created, modified]\ntitle: x\n---\n",
		},
		{
			name:   "answer_one",
			src:    "---\nknot_answer: approve 3f9a2c1b\n---\nB",
			fields: Fields{Answer: "approve 3f9a2c1b"},
			body:   "B",
			block:  "---\nknot_answer: approve 3f9a2c1b\n---\n",
		},
		{
			name:   "answer_list",
			src:    "---\nknot_answer:\n  - approve 3f9a2c1b\n  - deny 0badf00d too risky\n---\nB",
			fields: Fields{Answer: []any{"approve 3f9a2c1b", "deny 0badf00d too risky"}},
			body:   "B",
			block:  "---\nknot_answer:\n  - approve 3f9a2c1b\n  - deny 0badf00d too risky\n---\n",
		},
		{
			name:   "answer_of_another_type_is_handed_on",
			src:    "---\nknot_answer: 12345678\n---\nB",
			fields: Fields{Answer: 12345678},
			body:   "B",
			block:  "---\nknot_answer: 12345678\n---\n",
		},
		{
			name:  "answer_null",
			src:   "---\nknot_answer:\n---\nB",
			body:  "B",
			block: "---\nknot_answer:\n---\n",
		},
		{
			name:  "parse_null_fields",
			src:   "---\nknot_session: null\nknot_resume: ~\nknot_mode:\nknot_agent: null\nknot_model:\nknot_events: ~\n---\nB",
			body:  "B",
			block: "---\nknot_session: null\nknot_resume: ~\nknot_mode:\nknot_agent: null\nknot_model:\nknot_events: ~\n---\n",
		},
		{
			name:   "parse_closing_at_eof",
			src:    "---\nknot_mode: off\n---",
			fields: Fields{Mode: ModeOff},
			block:  "---\nknot_mode: off\n---",
		},
		{
			name:   "parse_legacy_session_field",
			src:    "---\nagent_doc_session: " + testID + "\n---\nbody",
			fields: Fields{Session: testID},
			body:   "body",
			block:  "---\nagent_doc_session: " + testID + "\n---\n",
		},
		{
			name:   "parse_legacy_session_shorthand",
			src:    "---\nsession: " + testID + "\nresume: abc\n---\n",
			fields: Fields{Session: testID, Resume: "abc"},
			block:  "---\nsession: " + testID + "\nresume: abc\n---\n",
		},
		{
			name:   "parse_mode_shorthand_alias",
			src:    "---\nmode: replace\n---\n",
			fields: Fields{Mode: ModeReplace},
			block:  "---\nmode: replace\n---\n",
		},
		{
			name:   "canonical_beats_alias",
			src:    "---\nsession: 11111111-2222-3333-4444-555555555555\nknot_session: " + testID + "\n---\n",
			fields: Fields{Session: testID},
			block:  "---\nsession: 11111111-2222-3333-4444-555555555555\nknot_session: " + testID + "\n---\n",
		},
		{
			name:   "null_canonical_does_not_shadow_alias",
			src:    "---\nknot_session: ~\nsession: " + testID + "\n---\n",
			fields: Fields{Session: testID},
			block:  "---\nknot_session: ~\nsession: " + testID + "\n---\n",
		},
		{
			name:   "agent_doc_alias_beats_short_alias",
			src:    "---\nmode: off\nagent_doc_mode: replace\n---\n",
			fields: Fields{Mode: ModeReplace},
			block:  "---\nmode: off\nagent_doc_mode: replace\n---\n",
		},
		{
			name:   "single_event_string",
			src:    "---\nknot_events: Deleted\n---\n",
			fields: Fields{Events: []string{"deleted"}},
			block:  "---\nknot_events: Deleted\n---\n",
		},
		{
			name:   "scheduled_event",
			src:    "---\nknot_events: [scheduled, Modified]\n---\n",
			fields: Fields{Events: []string{"scheduled", "modified"}},
			block:  "---\nknot_events: [scheduled, Modified]\n---\n",
		},
		{
			name:   "schedule",
			src:    "---\nknot_schedule: daily   07:00 Europe/Paris\n---\n",
			fields: Fields{Schedule: "daily 07:00 Europe/Paris"},
			block:  "---\nknot_schedule: daily   07:00 Europe/Paris\n---\n",
		},
		{
			name:   "empty_event_list",
			src:    "---\nknot_events: []\n---\n",
			fields: Fields{Events: []string{}},
			block:  "---\nknot_events: []\n---\n",
		},
		{
			name:  "empty_block",
			src:   "---\n---\nbody\n",
			body:  "body\n",
			block: "---\n---\n",
		},
		{
			name:   "bom_crlf",
			src:    "\uFEFF---\r\nknot_agent: claude\r\n---\r\nbody\r\n",
			fields: Fields{Agent: "claude"},
			body:   "body\r\n",
			block:  "---\r\nknot_agent: claude\r\n---\r\n",
			bom:    true,
			crlf:   true,
		},
		{
			name:  "bom_without_block",
			src:   "\uFEFFtext\r\nmore\n",
			body:  "text\r\nmore\n",
			block: "",
			bom:   true,
			crlf:  true,
		},
		{
			name:   "dashes_inside_block_scalar",
			src:    "---\nnote: |\n  ---\n  still the note\nknot_agent: a\n---\nbody",
			fields: Fields{Agent: "a"},
			body:   "body",
			block:  "---\nnote: |\n  ---\n  still the note\nknot_agent: a\n---\n",
		},
		{
			name:   "delimiters_with_trailing_blanks",
			src:    "---  \nknot_agent: a\n--- \t\nbody",
			fields: Fields{Agent: "a"},
			body:   "body",
			block:  "---  \nknot_agent: a\n--- \t\n",
		},
		{
			name: "blank_line_before_dashes_is_not_frontmatter",
			src:  "\n---\nknot_agent: a\n---\n",
			body: "\n---\nknot_agent: a\n---\n",
		},
		{
			name: "four_dashes_is_not_frontmatter",
			src:  "----\nknot_agent: a\n----\n",
			body: "----\nknot_agent: a\n----\n",
		},
		{
			name:   "document_end_marker",
			src:    "---\nknot_agent: a\n...\n---\nbody",
			fields: Fields{Agent: "a"},
			body:   "body",
			block:  "---\nknot_agent: a\n...\n---\n",
		},
		{
			name:   "comment_only_block",
			src:    "---\n# nothing yet\n---\n",
			block:  "---\n# nothing yet\n---\n",
			fields: Fields{},
		},
		{
			name:   "quoted_keys_and_values",
			src:    "---\n\"knot_model\": 'gpt-4o: mini'\n'knot_agent': \"my agent\"\n---\n",
			fields: Fields{Model: "gpt-4o: mini", Agent: "my agent"},
			block:  "---\n\"knot_model\": 'gpt-4o: mini'\n'knot_agent': \"my agent\"\n---\n",
		},
		{
			name:   "mode_any_case",
			src:    "---\nknot_mode: Replace\n---\n",
			fields: Fields{Mode: ModeReplace},
			block:  "---\nknot_mode: Replace\n---\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse([]byte(tt.src))
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tt.src, err)
			}
			if len(d.Fields.Problems) != 0 {
				t.Errorf("Parse(%q) problems: %v", tt.src, d.Fields.Problems)
			}
			got := d.Fields
			got.Problems, got.modeErr, got.modeKey, got.modeLn = nil, nil, "", 0
			if !reflect.DeepEqual(got, tt.fields) {
				t.Errorf("Parse(%q).Fields = %+v; want %+v", tt.src, got, tt.fields)
			}
			if string(d.Body) != tt.body {
				t.Errorf("Parse(%q).Body = %q; want %q", tt.src, d.Body, tt.body)
			}
			if block := tt.src[d.Block.Start:d.Block.End]; block != tt.block || d.BOM != tt.bom || d.CRLF != tt.crlf {
				t.Errorf("Parse(%q) = block %q, BOM %v, CRLF %v; want %q, %v, %v", tt.src, block, d.BOM, d.CRLF, tt.block, tt.bom, tt.crlf)
			}
			if bom := len(utf8BOM); d.BOM && d.Block.Start != bom || !d.BOM && d.Block.Start != 0 {
				t.Errorf("Parse(%q).Block starts at %d; want just after any BOM", tt.src, d.Block.Start)
			}
			if d.Block.End+len(d.Body) != len(tt.src) {
				t.Errorf("Parse(%q): block ends at %d but body has %d bytes of %d", tt.src, d.Block.End, len(d.Body), len(tt.src))
			}
		})
	}
}

func TestParse_Errors(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
		msg       string // a part of the message
	}{
		{"parse_unterminated_frontmatter", "---\nknot_session: " + testID + "\nno closing line\n", 1, "unterminated block"},
		{"unterminated_dashes_only", "---", 1, "add a closing --- line"},
		{"unterminated_after_bom", "\uFEFF---\r\nknot_mode: off\r\n", 1, "unterminated block"},
		{"bad_indentation", "---\ntitle: a\n  b: c\n---\n", 3, "invalid YAML"},
		{"unclosed_flow", "---\ntags: [a, b\ntitle: x\n---\n", 2, "did not find expected ',' or ']'"},
		{"tab_indentation", "---\na: 1\n\tb: 2\n---\n", 3, "tab"},
		{"list_not_map", "---\n- a\n- b\n---\n", 2, "not a list"},
		{"text_not_map", "---\nJust a thematic break\n---\n", 2, "not the text"},
		{"second_document", "---\na: 1\n--- x\n---\n", 3, "second YAML document"},
		{"duplicate_knot_key", "---\nknot_mode: off\ntitle: t\nknot_mode: append\n---\n", 4, "set twice (first at line 2)"},
		{"line_numbers_count_bom_and_crlf", "\uFEFF---\r\ntitle: x\r\ntags: [a,\r\n---\r\n", 3, "invalid YAML"},
		{"control_character", "---\na: \x01\n---\n", 1, "invalid YAML in the block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) error = %v; want a *SyntaxError", tt.src, err)
			}
			if se.Line != tt.line || !strings.Contains(se.Msg, tt.msg) {
				t.Errorf("Parse(%q) = line %d %q; want line %d and %q", tt.src, se.Line, se.Msg, tt.line, tt.msg)
			}
			if !strings.HasPrefix(err.Error(), "frontmatter: line ") {
				t.Errorf("Parse(%q) error %q does not start with the line", tt.src, err)
			}
		})
	}
}

func TestParse_Problems(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string // each problem's message, in order
		fields    Fields   // what is still read
	}{
		{
			name: "model_is_a_number",
			src:  "---\nknot_model: 123\n---\n",
			want: []string{`frontmatter: line 2: knot_model: the value the number "123" is not text; put it in quotes ("123") if you mean the text`},
		},
		{
			name:   "events_bogus",
			src:    "---\nknot_agent: a\nknot_events: [created, bogus]\n---\n",
			want:   []string{`frontmatter: line 3: knot_events: unknown event "bogus"; want created, modified, deleted or scheduled`},
			fields: Fields{Agent: "a"},
		},
		{
			name: "events_map",
			src:  "---\nknot_events: {created: true}\n---\n",
			want: []string{`frontmatter: line 2: knot_events: the value a map is not an event or a list of events; write for example [created, modified]`},
		},
		{
			// Not among the problems (the note still runs): the vault
			// reports it.
			name:   "schedule_not_text",
			src:    "---\nknot_agent: a\nknot_schedule: [daily, 07:00]\n---\n",
			fields: Fields{Agent: "a", ScheduleProblem: &FieldError{Key: "knot_schedule", Line: 3, Msg: "the value a list is not text"}},
		},
		{
			name: "session_not_uuid",
			src:  "---\nknot_session: abc\n---\n",
			want: []string{`frontmatter: line 2: knot_session: "abc" is not a UUID like 0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21`},
		},
		{
			name: "alias_session_not_uuid",
			src:  "---\ntitle: x\nsession: morning\n---\n",
			want: []string{`frontmatter: line 3: session: "morning" is not a UUID like 0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21 (knotd reads session as knot_session; set knot_session to override it)`},
		},
		{
			name:   "canonical_hides_bad_alias",
			src:    "---\nsession: morning\nknot_session: " + testID + "\n---\n",
			fields: Fields{Session: testID},
		},
		{
			name: "model_starts_with_dash",
			src:  "---\nknot_model: --dangerously-skip\n---\n",
			want: []string{`frontmatter: line 2: knot_model: the model name "--dangerously-skip" starts with "-" and could be read as a flag`},
		},
		{
			name: "agent_is_a_list",
			src:  "---\nknot_agent:\n  - a\n---\n",
			want: []string{`frontmatter: line 2: knot_agent: the value a list is not text`},
		},
		{
			name: "unknown_knot_key_and_empty_resume",
			src:  "---\nknot_mdoe: off\nknot_resume: ''\n---\n",
			want: []string{
				`frontmatter: line 2: knot_mdoe: unknown knotd key; knotd's keys are knot_session, knot_resume, knot_mode, knot_agent, knot_model, knot_events, knot_answer, knot_schedule`,
				`frontmatter: line 3: knot_resume: the value is empty; remove the key or give it a value`,
			},
		},
		{
			name:   "answer_is_no_unknown_key",
			src:    "---\nknot_answer: approve 3f9a2c1b\n---\n",
			fields: Fields{Answer: "approve 3f9a2c1b"},
		},
		{
			name: "mode_is_boolean",
			src:  "---\nknot_mode: false\n---\n",
			want: []string{`frontmatter: line 2: knot_mode: the value the boolean "false" is not text; put it in quotes ("false") if you mean the text`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse([]byte(tt.src))
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tt.src, err)
			}
			var got []string
			for _, p := range d.Fields.Problems {
				got = append(got, p.Error())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%q) problems =\n%q\nwant\n%q", tt.src, got, tt.want)
			}
			f := d.Fields
			f.Problems, f.modeErr, f.modeKey, f.modeLn = nil, nil, "", 0
			if !reflect.DeepEqual(f, tt.fields) {
				t.Errorf("Parse(%q).Fields = %+v; want %+v", tt.src, f, tt.fields)
			}
		})
	}
}

func TestResolveMode(t *testing.T) {
	tests := []struct {
		name, src string
		want      Mode
		err       string
	}{
		{"resolve_mode_defaults", "no frontmatter", ModeAppend, ""},
		{"resolve_mode_defaults_empty_block", "---\n---\n", ModeAppend, ""},
		{"resolve_mode_canonical_overrides_alias", "---\nmode: append\nagent_doc_mode: append\nknot_mode: replace\n---\n", ModeReplace, ""},
		{"alias_when_no_canonical", "---\nmode: off\n---\n", ModeOff, ""},
		{"null_mode_defaults", "---\nknot_mode: ~\n---\n", ModeAppend, ""},
		{"unknown_mode", "---\nknot_mode: stream\n---\n", "", `frontmatter: line 2: knot_mode: unknown mode "stream"; want append, replace or off`},
		{"unknown_alias_mode", "---\nmode: template\n---\n", "", `frontmatter: line 2: mode: unknown mode "template"; want append, replace or off (knotd reads mode as knot_mode; set knot_mode to override it)`},
		{"wrong_type", "---\nknot_mode: [off]\n---\n", "", `frontmatter: line 2: knot_mode: the value a list is not text`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse([]byte(tt.src))
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tt.src, err)
			}
			got, err := ResolveMode(d.Fields)
			if got != tt.want || errString(err) != tt.err {
				t.Errorf("ResolveMode(Parse(%q)) = %q, %v; want %q, %q", tt.src, got, err, tt.want, tt.err)
			}
		})
	}
	// Fields built by hand are resolved the same way.
	if m, err := ResolveMode(Fields{Mode: "bogus"}); err == nil || m != "" {
		t.Errorf(`ResolveMode(Fields{Mode: "bogus"}) = %q, %v; want an error`, m, err)
	}
	if m, err := ResolveMode(Fields{Mode: "OFF"}); err != nil || m != ModeOff {
		t.Errorf(`ResolveMode(Fields{Mode: "OFF"}) = %q, %v; want off`, m, err)
	}
}

// TestCheckModel covers the rule Parse applies to knot_model.
func TestCheckModel(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"claude-sonnet-4", true},
		{"llama3.1:8b", true},
		{"gpt-4o mini", true},
		{"", false},
		{"-m", false},
		{"--help", false},
		{"a\nb", false},
		{"\xff", false},
	} {
		if msg := checkModel(tt.name); (msg == "") != tt.ok {
			t.Errorf("checkModel(%q) = %q; want ok %v", tt.name, msg, tt.ok)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestParse_NewSession(t *testing.T) {
	tests := []struct {
		src        string
		newSession bool
		session    string
		problems   int
	}{
		{"---\nknot_session: new\n---\n", true, "", 0},
		{"---\nknot_session: \"new\"\n---\n", true, "", 0},
		{"---\nknot_session: NEW\n---\n", false, "", 1},
		{"---\nsession: new\n---\n", false, "", 1}, // the read-only alias asks for nothing
		{"---\nknot_session: 0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21\n---\n", false, "0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21", 0},
	}
	for _, tt := range tests {
		doc, err := Parse([]byte(tt.src))
		if err != nil {
			t.Fatalf("Parse(%q) = %v", tt.src, err)
		}
		f := doc.Fields
		if f.NewSession != tt.newSession || f.Session != tt.session || len(f.Problems) != tt.problems {
			t.Errorf("Parse(%q) = NewSession %v, Session %q, %d problems; want %v, %q, %d", tt.src, f.NewSession, f.Session, len(f.Problems), tt.newSession, tt.session, tt.problems)
		}
	}
}
