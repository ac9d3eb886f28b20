package argtemplate

import (
	"slices"
	"strings"
	"testing"
)

func TestExpandArgv(t *testing.T) {
	vals := map[string]string{
		"model": "sonnet", "session": "0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21", "strand": "-rf.md", "prompt": "## Event Context\nx",
		"vault": "/v", "event": "Created", "run_id": "r1",
	}
	tests := []struct {
		name string
		tmpl []string
		want []string
		err  string
	}{
		{name: "values stay inside their element", tmpl: []string{"tool", "--model", "{model}", "--msg={prompt}", "{vault}/{event}"},
			want: []string{"tool", "--model", "sonnet", "--msg=## Event Context\nx", "/v/Created"}},
		{name: "no re-expansion", tmpl: []string{"{run_id}{model}"}, want: []string{"r1sonnet"}},
		{name: "unknown braces kept", tmpl: []string{`{"a": 1}`, "{other}"}, want: []string{`{"a": 1}`, "{other}"}},
		{name: "a flag template stays a flag", tmpl: []string{"--strand={strand}"}, want: []string{"--strand=-rf.md"}},
		{name: "value would be a flag", tmpl: []string{"tool", "{strand}"}, err: "read it as a flag"},
		{name: "value after --", tmpl: []string{"tool", "--", "{strand}"}, want: []string{"tool", "--", "-rf.md"}},
		{name: "unset value", tmpl: []string{"tool", "{resume}"}, err: "uses {resume}, which has no value"},
	}
	for _, tt := range tests {
		got, err := Expand(tt.tmpl, vals)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: expandArgv(%q) = %q, %v; want error %q", tt.name, tt.tmpl, got, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s: expandArgv(%q) = %q, %v; want %q", tt.name, tt.tmpl, got, err, tt.want)
		}
	}
}

func TestOtherPlaceholders(t *testing.T) {
	got := OtherPlaceholders([]string{"tool", "--session={session}", "{sesion}", `{"a": 1}`, "{model}{sesion}{x_1}"})
	if want := []string{"sesion", "x_1"}; !slices.Equal(got, want) {
		t.Errorf("OtherPlaceholders = %q; want %q", got, want)
	}
}
