package frontmatter

import (
	"bytes"
	"strings"
	"testing"
)

const otherID = "11111111-2222-4333-8444-555555555555"

func mustParse(t *testing.T, src []byte) Document {
	t.Helper()
	d, err := Parse(src)
	if err != nil {
		t.Fatalf("Parse(%q) error: %v", src, err)
	}
	return d
}

func TestSetSession(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"set_session_id_creates_frontmatter", "# Note\n", "---\nknot_session: " + testID + "\n---\n# Note\n"},
		{
			"set_session_id_preserves_other_fields",
			"---\n# my note\ntitle: \"Plan\"   # shown\nknot_mode: replace\ntags:\n  - a\n  - b\n---\nbody\n",
			"---\n# my note\ntitle: \"Plan\"   # shown\nknot_mode: replace\ntags:\n  - a\n  - b\nknot_session: " + testID + "\n---\nbody\n",
		},
		{"replaces_in_place", "---\na: 1\nknot_session: " + otherID + " # mine\nb: 2\n---\n", "---\na: 1\nknot_session: " + testID + " # mine\nb: 2\n---\n"},
		{"replaces_invalid_value", "---\nknot_session: [x]\n---\n", "---\nknot_session: " + testID + "\n---\n"},
		{"fills_null_value", "---\nknot_session:\ntitle: t\n---\n", "---\nknot_session: " + testID + "\ntitle: t\n---\n"},
		{"keeps_alias", "---\nsession: " + otherID + "\n---\n", "---\nsession: " + otherID + "\nknot_session: " + testID + "\n---\n"},
		{"unchanged_when_equal", "---\nknot_session: '" + testID + "'\n---\n", "---\nknot_session: '" + testID + "'\n---\n"},
		{"crlf_and_bom", "\uFEFF---\r\ntitle: t\r\n---\r\nbody", "\uFEFF---\r\ntitle: t\r\nknot_session: " + testID + "\r\n---\r\nbody"},
		{"bom_no_block", "\uFEFFbody\r\n", "\uFEFF---\r\nknot_session: " + testID + "\r\n---\r\nbody\r\n"},
		{"empty_file", "", "---\nknot_session: " + testID + "\n---\n"},
		{"indented_map", "---\n  title: t\n  tags: [a]\n---\n", "---\n  title: t\n  tags: [a]\n  knot_session: " + testID + "\n---\n"},
		{"before_document_end", "---\ntitle: t\n...\n---\n", "---\ntitle: t\nknot_session: " + testID + "\n...\n---\n"},
		{"closing_at_eof", "---\ntitle: t\n---", "---\ntitle: t\nknot_session: " + testID + "\n---"},
		{"keeps_spacing_and_comment", "---\nknot_session:   " + otherID + "   # from knotd\nx: 1\n---\n", "---\nknot_session:   " + testID + "   # from knotd\nx: 1\n---\n"},
		{"replaces_quoted", "---\nknot_session: \"a # b\" # c\n---\n", "---\nknot_session: " + testID + " # c\n---\n"},
		{"replaces_flow", "---\nknot_session: [a, 'b]'] # c\n---\n", "---\nknot_session: " + testID + " # c\n---\n"},
		{"replaces_block_scalar", "---\nknot_session: |  # note\n  line one\n  # line two\n\n# about x\nx: 1\n---\n", "---\nknot_session: " + testID + "\n\n# about x\nx: 1\n---\n"},
		{"replaces_list_keeps_key_comment", "---\nknot_session:   # note\n  - a\n  - b\n# about x\nx: 1\n---\n", "---\nknot_session: " + testID + "   # note\n# about x\nx: 1\n---\n"},
		{"quoted_key", "---\n'knot_session' : " + otherID + "\n---\n", "---\n'knot_session' : " + testID + "\n---\n"},
		{"tabs", "---\nknot_session:\t" + otherID + "\t# c\n---\n", "---\nknot_session:\t" + testID + "\t# c\n---\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := SetSession([]byte(tt.src), testID)
			if err != nil || string(out) != tt.want {
				t.Fatalf("SetSession(%q) = %q, %v; want %q", tt.src, out, err, tt.want)
			}
			if d := mustParse(t, out); d.Fields.Session != testID {
				t.Errorf("Parse(SetSession(%q)).Fields.Session = %q", tt.src, d.Fields.Session)
			}
			if again, err := SetSession(out, testID); err != nil || !bytes.Equal(again, out) {
				t.Errorf("SetSession twice on %q = %q, %v; want no change", tt.src, again, err)
			}
		})
	}
	if out, err := SetSession([]byte("x"), "not-a-uuid"); err == nil {
		t.Errorf("SetSession(x, not-a-uuid) = %q; want an error", out)
	}
	if out, err := SetSession([]byte("---\nunterminated\n"), testID); err == nil {
		t.Errorf("SetSession(unterminated) = %q; want an error", out)
	}
}

func TestMergeFields(t *testing.T) {
	tests := []struct {
		name, src string
		fields    map[string]any
		want      string
	}{
		{
			"merge_fields_adds_new_field",
			"---\ntitle: t\nknot_mode: append\n---\nbody",
			map[string]any{"knot_agent": "claude", "knot_mode": ModeReplace},
			"---\ntitle: t\nknot_mode: replace\nknot_agent: claude\n---\nbody",
		},
		{
			"null_deletes",
			"---\ntitle: t\nknot_resume: |\n  old\n  handle\n# tags follow\ntags: [a]\nknot_model: x # pinned\n---\n",
			map[string]any{"knot_resume": nil, "knot_model": nil, "knot_agent": nil},
			"---\ntitle: t\n# tags follow\ntags: [a]\n---\n",
		},
		{
			"events_and_user_keys",
			"---\nknot_events:\n  - created\ntitle: t\n---\n",
			map[string]any{"knot_events": []string{"Modified", "deleted"}, "draft": true, "weight": 3, "tags": []string{"a b", "c"}, "title": "New: title"},
			"---\nknot_events: [modified, deleted]\ntitle: 'New: title'\ndraft: true\ntags: ['a b', c]\nweight: 3\n---\n",
		},
		{
			"same_value_other_style_is_no_change",
			"---\nknot_events:\n  - created\nknot_mode: \"off\"\n---\n",
			map[string]any{"knot_events": "created", "knot_mode": "off"},
			"---\nknot_events:\n  - created\nknot_mode: \"off\"\n---\n",
		},
		{
			"delete_only_without_block",
			"body",
			map[string]any{"knot_resume": nil},
			"body",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := MergeFields([]byte(tt.src), tt.fields)
			if err != nil || string(out) != tt.want {
				t.Fatalf("MergeFields(%q, %v) = %q, %v; want %q", tt.src, tt.fields, out, err, tt.want)
			}
			if again, err := MergeFields(out, tt.fields); err != nil || !bytes.Equal(again, out) {
				t.Errorf("MergeFields twice = %q, %v; want %q", again, err, out)
			}
		})
	}
	errTests := []struct {
		name   string
		fields map[string]any
		msg    string
	}{
		{"merge_fields_rejects_unknown", map[string]any{"knot_colour": "red"}, "unknown knotd key knot_colour"},
		{"rejects_alias", map[string]any{"mode": "off"}, "read-only alias; write knot_mode"},
		{"rejects_bad_mode", map[string]any{"knot_mode": "stream"}, `unknown mode "stream"`},
		{"rejects_bad_event", map[string]any{"knot_events": []string{"created", "renamed"}}, `unknown event "renamed"`},
		{"rejects_wrong_type", map[string]any{"knot_model": 4}, "want a string, not int"},
		{"rejects_unsupported_value", map[string]any{"when": 1.5}, "unsupported value type float64"},
		{"rejects_empty_key", map[string]any{"": "x"}, "empty key"},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			src := []byte("---\ntitle: t\n---\n")
			out, err := MergeFields(src, tt.fields)
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("MergeFields(%v) = %q, %v; want an error with %q", tt.fields, out, err, tt.msg)
			}
		})
	}
}

// TestEdit_Refusals covers layouts an edit cannot change in place: the
// strand is left alone and the error says why.
func TestEdit_Refusals(t *testing.T) {
	tests := []struct {
		name, src, msg string
	}{
		{"flow_map_block", "---\n{title: t}\n---\n", "flow map"},
		{"explicit_key", "---\n? knot_resume\n: old\n---\n", "something else than the key"},
		{"duplicate_user_key", "---\ntitle: a\ntitle: b\n---\n", "set more than once"},
		{"anchor_used_elsewhere", "---\nknot_resume: &r old\ncopy: *r\n---\n", "would not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fields := map[string]any{"knot_resume": "new", "title": "t2"}
			if tt.name != "duplicate_user_key" {
				delete(fields, "title")
			}
			out, err := MergeFields([]byte(tt.src), fields)
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("MergeFields(%q) = %q, %v; want an error with %q", tt.src, out, err, tt.msg)
			}
		})
	}
}

func TestWithoutOwnKeys(t *testing.T) {
	id := "0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21"
	tests := []struct {
		name, src, want string
	}{
		{"no frontmatter", "body\n", "body\n"},
		{"knotd made the block", "---\nknot_session: " + id + "\n---\nbody\n", "body\n"},
		{"knotd made the block, CRLF", "---\r\nknot_session: " + id + "\r\n---\r\nbody\r\n", "body\r\n"},
		{"with a BOM", "\ufeff---\nknot_session: " + id + "\nknot_resume: r1\n---\nbody\n", "\ufeffbody\n"},
		{"the user's keys stay", "---\ntitle: t\nknot_session: " + id + "\n---\nbody\n", "---\ntitle: t\n---\nbody\n"},
		{"order does not matter", "---\nknot_resume: r\ntitle: t\nknot_session: " + id + "\n---\nbody\n", "---\ntitle: t\n---\nbody\n"},
		{"a comment keeps the block", "---\n# mine\nknot_session: " + id + "\n---\nbody\n", "---\n# mine\n---\nbody\n"},
		{"an empty block goes", "---\n---\nbody\n", "body\n"},
		{"a blank block goes", "---\n\n  \n---\nbody\n", "body\n"},
		{"an answer is knotd's", "---\nknot_answer: approve 3f9a2c1b\n---\nbody\n", "body\n"},
		{"answers among the user's keys", "---\ntitle: t\nknot_answer:\n  - approve 3f9a2c1b\n  - deny 0badf00d too risky\ntags: [a]\n---\nbody\n", "---\ntitle: t\ntags: [a]\n---\nbody\n"},
		{"an answer beside a session", "---\nknot_session: " + id + "\nknot_answer: 'Deny 3f9a2c1b: no'\n---\nbody\n", "body\n"},
		{"a schedule is knotd's", "---\ntitle: t\nknot_schedule: daily 07:00\n---\nbody\n", "---\ntitle: t\n---\nbody\n"},
		{"other keys are content", "---\nknot_mode: replace\n---\nbody\n", "---\nknot_mode: replace\n---\nbody\n"},
		{"aliases are the user's", "---\nsession: " + id + "\n---\nbody\n", "---\nsession: " + id + "\n---\nbody\n"},
		{"invalid YAML is left alone", "---\n: [\n---\nbody\n", "---\n: [\n---\nbody\n"},
		{"unterminated is left alone", "---\nknot_session: " + id + "\nbody\n", "---\nknot_session: " + id + "\nbody\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(WithoutOwnKeys([]byte(tt.src))); got != tt.want {
				t.Errorf("WithoutOwnKeys(%q) = %q; want %q", tt.src, got, tt.want)
			}
		})
	}
}

func TestAskNewSession(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"# body\n", "---\nknot_session: new\n---\n# body\n"},
		{"---\ntitle: T\nknot_session: " + testID + "\n---\nbody\n", "---\ntitle: T\nknot_session: new\n---\nbody\n"},
		{"---\nknot_session: new\n---\nbody\n", "---\nknot_session: new\n---\nbody\n"},
	} {
		got, err := AskNewSession([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("AskNewSession(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		doc, err := Parse(got)
		if err != nil || !doc.Fields.NewSession {
			t.Errorf("AskNewSession(%q) does not parse as a new session: %+v, %v", tc.in, doc.Fields, err)
		}
	}
}
