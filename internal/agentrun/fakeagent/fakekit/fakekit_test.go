package fakekit

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestParseFlags(t *testing.T) {
	f, err := ParseFlags([]string{"-p", "--output-format", "json", "--system=- a list", "exec", "-"},
		[]string{"--output-format", "--system"}, []string{"-p"})
	if err != nil || !f.Bools["-p"] || f.Values["--output-format"] != "json" || f.Values["--system"] != "- a list" ||
		!slices.Equal(f.Rest, []string{"exec", "-"}) {
		t.Errorf("ParseFlags = %+v, %v", f, err)
	}
	for _, args := range [][]string{{"--continue"}, {"--output-format"}} {
		if _, err := ParseFlags(args, []string{"--output-format"}, nil); err == nil {
			t.Errorf("ParseFlags(%q) succeeded; want an error", args)
		}
	}
}

func TestCalls(t *testing.T) {
	dir := t.TempDir()
	if calls, err := Calls(dir); err != nil || calls != nil {
		t.Errorf("Calls(empty dir) = %v, %v; want none", calls, err)
	}
	if err := AppendLine(filepath.Join(dir, callsFile), []byte(`{"behaviour":"echo","args":["a"],"stdin":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	calls, err := Calls(dir)
	if err != nil || len(calls) != 1 || calls[0].Behaviour != "echo" || calls[0].Stdin != "hi" || !slices.Equal(calls[0].Args, []string{"a"}) {
		t.Errorf("Calls = %+v, %v", calls, err)
	}
}

func TestConversations(t *testing.T) {
	inv := &Invocation{State: t.TempDir(), Dir: "/vault/a"}
	c, err := inv.Conversations("claude", true)
	if err != nil {
		t.Fatal(err)
	}
	if n := c.Turns("s1"); n != 0 {
		t.Errorf("turns(new) = %d", n)
	}
	for want := 1; want <= 2; want++ {
		if n, err := c.Bump("s1"); n != want || err != nil {
			t.Errorf("bump = %d, %v; want %d", n, err, want)
		}
	}
	other := &Invocation{State: inv.State, Dir: "/vault/b"}
	c2, err := other.Conversations("claude", true)
	if err != nil {
		t.Fatal(err)
	}
	if n := c2.Turns("s1"); n != 0 {
		t.Errorf("a conversation leaked into another working directory (%d turns)", n)
	}
	if _, err := c.Bump("../x"); err == nil {
		t.Error("bump(../x) succeeded; want an error")
	}
}
