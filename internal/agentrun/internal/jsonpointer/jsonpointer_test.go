package jsonpointer

import (
	"bytes"
	"encoding/json"
	"testing"
)

func decodeTestJSON(t testing.TB, s string) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestPointer_LookupText(t *testing.T) {
	// The document and the first cases are RFC 6901's own examples.
	doc := decodeTestJSON(t, `{"foo": ["bar", "baz"], "": 0, "a/b": 1, "c%d": 2, "e^f": 3, "g|h": 4,
		"i\\j": 5, "k\"l": 6, " ": 7, "m~n": 8, "t": true, "n": null, "o": {"p": "q"}}`)
	tests := []struct {
		ptr, want string
		ok        bool
	}{
		{"/foo/0", "bar", true},
		{"/", "0", true},
		{"/a~1b", "1", true},
		{"/c%d", "2", true},
		{"/e^f", "3", true},
		{"/g|h", "4", true},
		{"/i\\j", "5", true},
		{"/k\"l", "6", true},
		{"/ ", "7", true},
		{"/m~0n", "8", true},
		{"/t", "true", true},
		{"/o/p", "q", true},
		{"/foo", "", false},   // an array is not text
		{"/o", "", false},     // nor is an object
		{"/n", "", false},     // null is no value
		{"/foo/2", "", false}, // out of range
		{"/foo/01", "", false},
		{"/foo/-", "", false},
		{"/missing", "", false},
		{"/o/p/q", "", false}, // through a string
		{"", "", false},       // the whole document is an object
	}
	for _, tt := range tests {
		p, err := Parse(tt.ptr)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.ptr, err)
		}
		got, err := p.LookupText(doc)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("LookupText(%q) = %q, %v; want %q ok=%v", tt.ptr, got, err, tt.want, tt.ok)
		}
	}
}

func TestParsePointer_Rejects(t *testing.T) {
	for _, s := range []string{"foo", "/a~", "/a~2", "~0"} {
		if p, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) = %q; want error", s, p)
		}
	}
}

func FuzzParsePointer(f *testing.F) {
	for _, s := range []string{"", "/", "/a~1b/~0", "/foo/0", "/a~"} {
		f.Add(s)
	}
	doc := decodeTestJSON(f, `{"a": {"b": ["x", {"c": 1}]}, "~/": "y"}`)
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Parse(s)
		if err != nil {
			return
		}
		if p.String() != s {
			t.Fatalf("Parse(%q).String() = %q; want the input back", s, p.String())
		}
		_, _ = p.LookupText(doc) // must not panic
	})
}
