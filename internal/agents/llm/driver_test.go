package llm_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/knotd/knotd/internal/agents/kit"
	"github.com/knotd/knotd/internal/agents/llm"
)

const sess = "0b8f6c1e-5a9d-4c1e-9f0a-2f7c3b1d8e21"

func TestDriver_Argv(t *testing.T) {
	db := filepath.Join("/state", "llm", sess+".db")
	tests := []struct {
		name string
		a    kit.Attempt
		want []string
	}{
		{"new", kit.Attempt{Program: []string{"llm"}},
			[]string{"llm", "prompt", "-d", db, "--log"}},
		{"resume", kit.Attempt{Program: []string{"llm"}, Resume: "c-1", Model: "gpt-4o", Instructions: "-x"},
			[]string{"llm", "prompt", "-d", db, "--log", "-m", "gpt-4o", "--system=-x", "--cid", "c-1"}},
		{"a restart keeps the strand's database", kit.Attempt{Program: []string{"llm"}, Session: "fresh-uuid"},
			[]string{"llm", "prompt", "-d", db, "--log"}},
	}
	for _, tt := range tests {
		a := tt.a
		a.StateDir, a.StrandSession = "/state", sess
		got, err := llm.Driver{}.Argv(&a)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s: argv = %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}

func TestDriver_ReadsConversationFromLogs(t *testing.T) {
	logs, err := os.ReadFile(filepath.Join("testdata", "logs-list.json"))
	if err != nil {
		t.Fatal(err)
	}
	a := &kit.Attempt{Program: []string{"llm"}, StateDir: "/state", StrandSession: sess}
	var gotArgv []string
	p := kit.Parsed{Reply: "Hello!"}
	llm.Driver{}.Finish(context.Background(), a, &p, func(_ context.Context, argv []string) kit.Proc {
		gotArgv = argv
		return kit.Proc{OK: true, Stdout: logs, Status: "exit status 0"}
	})
	wantArgv := []string{"llm", "logs", "list", "-n", "1", "--json", "-d", filepath.Join("/state", "llm", sess+".db")}
	if !slices.Equal(gotArgv, wantArgv) {
		t.Errorf("logs argv = %q; want %q", gotArgv, wantArgv)
	}
	if p.Handle != "01jm8ec74taftdgj2t4zra9z0j" || p.Usage == nil || *p.Usage != (kit.Usage{InputTokens: 8, OutputTokens: 12}) {
		t.Errorf("after logs: handle %q usage %+v", p.Handle, p.Usage)
	}

	tests := []struct {
		name string
		pr   kit.Proc
		note string
	}{
		{"failed", kit.Proc{Stderr: "Error: No such option: -d", Status: "exit status 2"}, "could not read the llm conversation id: exit status 2"},
		{"no id", kit.Proc{OK: true, Stdout: []byte(`[{"id": "x"}]`), Status: "exit status 0"}, "llm logs list printed no conversation id"},
		{"not JSON", kit.Proc{OK: true, Stdout: []byte("Error: no logs\n"), Status: "exit status 0"}, "llm logs list printed no conversation id"},
	}
	for _, tt := range tests {
		p := kit.Parsed{Reply: "Hello!"}
		llm.Driver{}.Finish(context.Background(), a, &p, func(context.Context, []string) kit.Proc { return tt.pr })
		if p.Handle != "" || p.Usage != nil || len(p.Notes) != 1 || p.Notes[0] != tt.note {
			t.Errorf("%s: handle %q usage %+v notes %q; want no handle and the note %q", tt.name, p.Handle, p.Usage, p.Notes, tt.note)
		}
	}
}

func TestDriver_Prepare(t *testing.T) {
	state := t.TempDir()
	a := &kit.Attempt{StateDir: state, StrandSession: sess}
	if err := (llm.Driver{}).Prepare(a); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(state, "llm"))
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("llm folder: %v, %v; want a private folder", fi, err)
	}
	a.StateDir = "relative"
	if err := (llm.Driver{}).Prepare(a); err == nil || !strings.Contains(err.Error(), "Request.StateDir") {
		t.Errorf("Prepare(relative state dir) = %v; want an error naming Request.StateDir", err)
	}
}
