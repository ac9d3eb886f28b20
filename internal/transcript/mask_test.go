package transcript

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestMasker_Argv(t *testing.T) {
	m := NewMasker([]string{"OPENAI_API_KEY=org-secret-value-1234", "SHORT_TOKEN=abc"})
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"nil", nil, nil},
		{"plain", []string{"claude", "-p", "--output-format", "json", "--max-tokens", "4096", "--keep"},
			[]string{"claude", "-p", "--output-format", "json", "--max-tokens", "4096", "--keep"}},
		{"flag with value", []string{"tool", "--api-key=abc", "--token", "xyz", "-password", "p"},
			[]string{"tool", "--api-key=" + Masked, "--token", Masked, "-password", Masked}},
		{"secret flag last", []string{"tool", "--auth"}, []string{"tool", "--auth"}},
		{"assignment", []string{"env", "GITHUB_TOKEN=ghx", "MYAPIKEY=k", "model_provider.api_key=v", "developer_instructions=keep me", "HOME=/h"},
			[]string{"env", "GITHUB_TOKEN=" + Masked, "MYAPIKEY=" + Masked, "model_provider.api_key=" + Masked, "developer_instructions=keep me", "HOME=/h"}},
		{"header", []string{"curl", "-H", "Authorization: Bearer abc", "-H", "Accept: */*"},
			[]string{"curl", "-H", "Authorization: " + Masked, "-H", "Accept: */*"}},
		{"known value anywhere", []string{"tool", "--org=org-secret-value-1234", "prefix org-secret-value-1234 suffix"},
			[]string{"tool", "--org=" + Masked, "prefix " + Masked + " suffix"}},
		{"short values are not secrets", []string{"abc"}, []string{"abc"}},
		{"token shapes", []string{"use sk-ant-api03-abcdefghijklmnop", "ghp_abcdefghijklmnopqrstuvwxyz012345", "AKIAABCDEFGHIJKLMNOP", "sk-short"},
			[]string{"use " + Masked, Masked, Masked, "sk-short"}},
		{"lone dash", []string{"-", "--"}, []string{"-", "--"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.Argv(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Argv(%q) = %q; want %q", tc.in, got, tc.want)
			}
		})
	}
	var nilMasker *Masker
	if got := nilMasker.Argv([]string{"--token", "x", "y"}); !reflect.DeepEqual(got, []string{"--token", Masked, "y"}) {
		t.Errorf("nil Masker: Argv = %q", got)
	}
	if got := nilMasker.Text("org-secret-value-1234"); got != "org-secret-value-1234" {
		t.Errorf("nil Masker: Text = %q", got)
	}
}

func TestNewMasker_Secrets(t *testing.T) {
	env := []string{
		"ANTHROPIC_API_KEY=sk-ant-0123456789",
		"aws_secret_access_key=wJalrXUtnFEMI/K7MDENG",
		"DB_PASSWORD=hunter2hunter2",
		"MAX_TOKENS=40960000",      // a number: not maskable
		"GPG_KEY_ID=1e100000",      // number-like
		"SLACK_TOKEN=xoxb",         // too short
		"PATH=/usr/bin:/bin:/sbin", // not secret-looking
		"BROKEN",
		"KNOT_SESSION=0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21",
	}
	m := NewMasker(env)
	for in, want := range map[string]string{
		"key sk-ant-0123456789 end":  "key " + Masked + " end",
		"wJalrXUtnFEMI/K7MDENG":      Masked,
		"hunter2hunter2":             Masked,
		"40960000 1e100000 xoxb":     "40960000 1e100000 xoxb",
		"/usr/bin:/bin:/sbin":        "/usr/bin:/bin:/sbin",
		"0b8f6c1e-5a9d-4c1e-9f0a-2f": "0b8f6c1e-5a9d-4c1e-9f0a-2f",
	} {
		if got := m.Text(in); got != want {
			t.Errorf("Text(%q) = %q; want %q", in, got, want)
		}
	}
	if NewMasker(nil).Text("x") != "x" {
		t.Errorf("empty Masker changed text")
	}
}

func TestMasker_MaskJSONStaysValid(t *testing.T) {
	for _, secret := range []string{`quote"quote`, `back\slash\\`, `tab	and<html>&`, `\\\\\\\\`, `plainsecretvalue`, `é unicode ü secret`} {
		t.Run(secret, func(t *testing.T) {
			m := NewMasker([]string{"MY_SECRET=" + secret})
			data, err := marshalNoEscape(map[string]any{
				"a": secret, "b": []any{"x" + secret + "y", 1.5, nil}, secret: "key", "c": `\\` + secret,
			})
			if err != nil {
				t.Fatal(err)
			}
			out := m.maskJSON(data)
			if !json.Valid(out) {
				t.Fatalf("maskJSON(%s) = %s: not JSON", data, out)
			}
			var v map[string]any
			if err := json.Unmarshal(out, &v); err != nil {
				t.Fatal(err)
			}
			if v["a"] != Masked || v["b"].([]any)[0] != "x"+Masked+"y" || v[Masked] != "key" {
				t.Errorf("maskJSON(%s) = %s", data, out)
			}
		})
	}
	// A secret that matches the JSON text across an escape ("\n" then
	// "abcdefgh") is not in the string itself: the fallback sees that.
	m := NewMasker([]string{"A_KEY=nabcdefgh"})
	out := m.maskJSON([]byte(`{"a":"x\nabcdefgh","b":"nabcdefgh"}`))
	if string(out) != `{"a":"x\nabcdefgh","b":"`+Masked+`"}` {
		t.Errorf("maskJSON across an escape = %s", out)
	}
	if got := NewMasker([]string{"A_KEY=not-present-here"}).maskJSON([]byte(`{"a":"b"}`)); string(got) != `{"a":"b"}` {
		t.Errorf("maskJSON without secrets = %s", got)
	}
}
