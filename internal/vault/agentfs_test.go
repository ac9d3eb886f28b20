package vault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/vault/internal/agentfs"
)

// agentFSEnv is a vault with notes an agent may and may not see: ignored
// ones, ones a mode: off rule and Obsidian's Excluded files keep from
// agents, knotd's own files, links out of the vault, a tie-off.
func agentFSEnv(t *testing.T) (*env, *Vault, string) {
	t.Helper()
	e := newEnv(t)
	maxSize := config.Size(64 << 10)
	e.flags.Limits.MaxStrandSize = &maxSize
	e.userConfig("rules:\n  - path: private/\n    mode: off\n")
	outside := t.TempDir()
	mustDo(t, os.WriteFile(filepath.Join(outside, "data.md"), []byte("outside\n"), 0o644))
	e.write("notes/a.md", "one\ntwo\nthree\nfour\n")
	e.write("notes/a.tieoff.md", "the history\n")
	e.write(".gitignore", "secret.md\n")
	e.write("notes/secret.md", "ignored\n")
	e.write("private/p.md", "off\n")
	e.write("excluded/x.md", "excluded\n")
	e.write(".obsidian/app.json", `{"userIgnoreFilters": ["excluded/"]}`)
	e.write("big.md", strings.Repeat("x", 64<<10+1))
	e.write("binary.md", "a\x00b")
	mustDo(t, os.Symlink(filepath.Join(outside, "data.md"), e.abs("notes/out.md")))
	mustDo(t, os.Symlink(outside, e.abs("linked")))
	v := e.open()
	return e, v, outside
}

// TestAgentFS_Read: an agent reads what is in the vault and not kept
// from it, from a line and up to a number of lines, and is refused the
// rest, with the reason.
func TestAgentFS_Read(t *testing.T) {
	e, v, outside := agentFSEnv(t)
	alias := filepath.Join(t.TempDir(), "alias")
	mustDo(t, os.Symlink(e.root, alias))
	a := v.newAgentFS(agentrun.Agent{})
	tests := []struct {
		name        string
		path        string
		line, limit int
		want        string // the text read, when wantErr is ""
		wantErr     string
	}{
		{name: "whole", path: e.abs("notes/a.md"), want: "one\ntwo\nthree\nfour\n"},
		{name: "from a line", path: e.abs("notes/a.md"), line: 3, want: "three\nfour\n"},
		{name: "a few lines", path: e.abs("notes/a.md"), line: 2, limit: 2, want: "two\nthree\n"},
		{name: "limit past the end", path: e.abs("notes/a.md"), line: 4, limit: 9, want: "four\n"},
		{name: "line past the end", path: e.abs("notes/a.md"), line: 9, want: ""},
		{name: "first lines", path: e.abs("notes/a.md"), limit: 1, want: "one\n"},
		{name: "a tie-off", path: e.abs("notes/a.tieoff.md"), want: "the history\n"},
		{name: "through a link to the vault root", path: filepath.Join(alias, "notes", "a.md"), want: "one\ntwo\nthree\nfour\n"},
		{name: "outside", path: filepath.Join(outside, "data.md"), wantErr: "refused: " + filepath.Join(outside, "data.md") + " is outside the vault"},
		{name: "dot-dot out", path: e.abs("notes") + "/../../" + filepath.Base(outside) + "/secret.md", wantErr: "has a .. element"},
		{name: "dot-dot in", path: e.abs("notes") + "/../notes/a.md", wantErr: "has a .. element"},
		{name: "relative", path: "notes/a.md", wantErr: "is not an absolute path"},
		{name: "the root", path: e.root, wantErr: "the vault root is a folder"},
		{name: "a link out", path: e.abs("notes/out.md"), wantErr: "refused: notes/out.md is not a regular file (a symbolic link)"},
		{name: "below a link to a folder", path: e.abs("linked/data.md"), wantErr: "refused: linked/data.md is below linked, a symbolic link to a folder"},
		{name: "ignored", path: e.abs("notes/secret.md"), wantErr: `refused: notes/secret.md is ignored by .gitignore:1 pattern "secret.md"`},
		{name: "mode off", path: e.abs("private/p.md"), wantErr: `refused: private/p.md is kept from agents: rule path "private/"`},
		{name: "Obsidian's excluded files", path: e.abs("excluded/x.md"), wantErr: `refused: excluded/x.md is kept from agents: Obsidian's Excluded files ("excluded/")`},
		{name: "Obsidian's config", path: e.abs(".obsidian/app.json"), wantErr: "refused: .obsidian/app.json is ignored: inside .obsidian"},
		{name: "knotd's folder", path: e.abs(".knot/config.yaml"), wantErr: "refused: knotd's own files (.knot)"},
		{name: "a folder", path: e.abs("notes"), wantErr: "refused: notes is not a regular file (a folder)"},
		{name: "huge", path: e.abs("big.md"), wantErr: "refused: big.md is larger than limits.max_strand_size (64.0 KiB)"},
		{name: "binary", path: e.abs("binary.md"), wantErr: "refused: binary.md is not a text file"},
		{name: "missing", path: e.abs("notes/none.md"), wantErr: "notes/none.md: file does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := a.ReadTextFile(context.Background(), tt.path, tt.line, tt.limit)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ReadTextFile(%s) = %q, %v; want an error with %q", tt.path, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ReadTextFile(%s, %d, %d) = %q, %v; want %q", tt.path, tt.line, tt.limit, got, err, tt.want)
			}
		})
	}
}

// TestAgentFS_Write: an agent writes only at edit or full, never what it
// may not read, a tie-off or an ignore file, never over a save it has not
// read, and creates new files and folders inside the vault.
func TestAgentFS_Write(t *testing.T) {
	type step struct {
		read string // read this first, when set
		save string // then the user saves notes/a.md with this, when set
		// atReplace: the file rel is saved with this between knotd's read
		// of it and its replace (as OpenCode's own write tool does), when set.
		atReplace string
		path      string
		content   string
		wantErr   string
	}
	tests := []struct {
		name  string
		perm  agentrun.Permissions
		step  step
		check map[string]string // rel → content after the write
	}{
		{name: "read-only", perm: "", step: step{path: "notes/a.md", content: "agent\n", wantErr: "refused: writes need permissions: edit or full"},
			check: map[string]string{"notes/a.md": "one\n"}},
		{name: "read-only, spelled", perm: agentrun.PermReadOnly, step: step{path: "new.md", content: "agent\n", wantErr: "refused: writes need permissions: edit or full"},
			check: map[string]string{"new.md": ""}},
		{name: "edit", perm: agentrun.PermEdit, step: step{read: "notes/a.md", path: "notes/a.md", content: "one\nagent\n"},
			check: map[string]string{"notes/a.md": "one\nagent\n"}},
		// At ask, agentrun lets through only the writes of an edit the
		// user approved: what reaches the file system is written as at edit.
		{name: "ask", perm: agentrun.PermAsk, step: step{read: "notes/a.md", path: "notes/a.md", content: "one\nagent\n"},
			check: map[string]string{"notes/a.md": "one\nagent\n"}},
		{name: "full, without reading first", perm: agentrun.PermFull, step: step{path: "notes/a.md", content: "agent\n"},
			check: map[string]string{"notes/a.md": "agent\n"}},
		{name: "a save during the run, without reading first", perm: agentrun.PermFull, step: step{save: "one\nuser\n", path: "notes/a.md", content: "agent\n",
			wantErr: "refused: notes/a.md changed while the agent ran (the user saved it) and the agent did not read it through knotd; the user's save is kept"},
			check: map[string]string{"notes/a.md": "one\nuser\n"}},
		{name: "a save since the read", perm: agentrun.PermEdit, step: step{read: "notes/a.md", save: "one\nuser\n", path: "notes/a.md", content: "one\nagent\n",
			wantErr: "refused: notes/a.md changed since the agent read it (the user saved it); the user's save is kept"},
			check: map[string]string{"notes/a.md": "one\nuser\n"}},
		{name: "a deletion since the read", perm: agentrun.PermEdit, step: step{read: "notes/a.md", save: "-", path: "notes/a.md", content: "one\nagent\n",
			wantErr: "refused: notes/a.md was deleted since the agent read it"},
			check: map[string]string{"notes/a.md": ""}},
		{name: "a save while it writes", perm: agentrun.PermEdit, step: step{read: "notes/a.md", atReplace: "one\nuser\n", path: "notes/a.md", content: "one\nagent\n",
			wantErr: "refused: notes/a.md changed while the agent wrote it; the user's save is kept"},
			check: map[string]string{"notes/a.md": "one\nuser\n"}},
		{name: "the same text written meanwhile", perm: agentrun.PermEdit, step: step{read: "notes/a.md", atReplace: "one\nagent\n", path: "notes/a.md", content: "one\nagent\n"},
			check: map[string]string{"notes/a.md": "one\nagent\n"}},
		{name: "new file in new folders", perm: agentrun.PermEdit, step: step{path: "new/deep/n.md", content: "new\n"},
			check: map[string]string{"new/deep/n.md": "new\n"}},
		{name: "a tie-off", perm: agentrun.PermFull, step: step{path: "notes/a.tieoff.md", content: "forged\n", wantErr: "refused: notes/a.tieoff.md is a tie-off"},
			check: map[string]string{"notes/a.tieoff.md": "the history\n"}},
		{name: "a new tie-off", perm: agentrun.PermFull, step: step{path: "notes/b.tieoff.md", content: "forged\n", wantErr: "refused: notes/b.tieoff.md is a tie-off"},
			check: map[string]string{"notes/b.tieoff.md": ""}},
		{name: "an ignore file", perm: agentrun.PermFull, step: step{path: "notes/.knotignore", content: "!secret.md\n", wantErr: "refused: notes/.knotignore is an ignore file"},
			check: map[string]string{"notes/.knotignore": ""}},
		{name: "ignored", perm: agentrun.PermFull, step: step{path: "notes/secret.md", content: "x\n", wantErr: "refused: notes/secret.md is ignored"},
			check: map[string]string{"notes/secret.md": "ignored\n"}},
		{name: "mode off", perm: agentrun.PermFull, step: step{path: "private/p.md", content: "x\n", wantErr: "refused: private/p.md is kept from agents"},
			check: map[string]string{"private/p.md": "off\n"}},
		{name: "knotd's folder", perm: agentrun.PermFull, step: step{path: ".knot/config.yaml", content: "x: 1\n", wantErr: "refused: knotd's own files"}},
		{name: "a link out", perm: agentrun.PermFull, step: step{path: "notes/out.md", content: "x\n", wantErr: "refused: notes/out.md is not a regular file (a symbolic link)"}},
		{name: "a new file below a link out", perm: agentrun.PermFull, step: step{path: "linked/new.md", content: "x\n", wantErr: "refused: linked/new.md is below linked"}},
		{name: "too large", perm: agentrun.PermFull, step: step{path: "notes/a.md", content: strings.Repeat("x", 64<<10+1), wantErr: "limits.max_strand_size"},
			check: map[string]string{"notes/a.md": "one\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, v, outside := agentFSEnv(t)
			e.write("notes/a.md", "one\n")
			savedBeforeTheRun(t, e, "notes/a.md")
			a := v.newAgentFS(agentrun.Agent{Permissions: tt.perm})
			ctx := context.Background()
			if tt.step.read != "" {
				if _, err := a.ReadTextFile(ctx, e.abs(tt.step.read), 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			switch tt.step.save {
			case "":
			case "-":
				e.remove("notes/a.md")
			default:
				e.write("notes/a.md", tt.step.save)
			}
			if tt.step.atReplace != "" {
				a.BeforeReplace = func(rel string) { e.write(rel, tt.step.atReplace) }
			}
			err := a.WriteTextFile(ctx, e.abs(tt.step.path), tt.step.content)
			switch {
			case tt.step.wantErr == "" && err != nil:
				t.Fatalf("WriteTextFile(%s): %v", tt.step.path, err)
			case tt.step.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.step.wantErr)):
				t.Fatalf("WriteTextFile(%s) = %v; want an error with %q", tt.step.path, err, tt.step.wantErr)
			}
			a.Close()
			for rel, want := range tt.check {
				got, err := os.ReadFile(e.abs(rel))
				if want == "" && !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s: %q, %v; want no such file", rel, got, err)
				} else if want != "" && string(got) != want {
					t.Errorf("%s = %q, %v; want %q", rel, got, err, want)
				}
			}
			if got, err := os.ReadFile(filepath.Join(outside, "data.md")); err != nil || string(got) != "outside\n" {
				t.Errorf("the file outside the vault = %q, %v", got, err)
			}
			if _, err := os.Lstat(filepath.Join(outside, "new.md")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a file was created outside the vault: %v", err)
			}
		})
	}
}

// TestAgentFS_MayEdit: knotd grants an agent's request for permission to
// edit files (which it may then write with its own tools, past knotd)
// only where its write through knotd would lose no save of the user's and
// be allowed; at full, everything but a user's save in the vault. A file
// knotd granted an edit of may hold the agent's own write: a later edit
// of it is granted, unless the agent read it through knotd and it changed
// since.
func TestAgentFS_MayEdit(t *testing.T) {
	tests := []struct {
		name    string
		perm    agentrun.Permissions
		read    bool   // the agent reads notes/a.md through knotd first
		readNow bool   // the agent reads notes/a.md through knotd after the save
		grant   bool   // knotd granted an edit of notes/a.md first
		save    string // then the user saves notes/a.md with this ("-": deletes it), when set
		path    string // "" for the outside file
		wantErr string
	}{
		{name: "untouched", perm: agentrun.PermEdit, path: "notes/a.md"},
		{name: "a new file", perm: agentrun.PermEdit, path: "new/n.md"},
		{name: "a save during the run", perm: agentrun.PermEdit, save: "one\nuser\n", path: "notes/a.md",
			wantErr: "refused: notes/a.md changed while the agent ran (the user saved it) and the agent did not read it through knotd; the user's save is kept"},
		{name: "a save during the run, at full", perm: agentrun.PermFull, save: "one\nuser\n", path: "notes/a.md",
			wantErr: "notes/a.md changed while the agent ran"},
		{name: "a save since the read", perm: agentrun.PermEdit, read: true, save: "one\nuser\n", path: "notes/a.md",
			wantErr: "refused: notes/a.md changed since the agent read it (the user saved it); the user's save is kept"},
		{name: "a deletion since the read", perm: agentrun.PermEdit, read: true, save: "-", path: "notes/a.md",
			wantErr: "refused: notes/a.md was deleted since the agent read it"},
		{name: "read after the save", perm: agentrun.PermEdit, save: "one\nuser\n", readNow: true, path: "notes/a.md"},
		{name: "granted before", perm: agentrun.PermEdit, grant: true, save: "one\nagent\n", path: "notes/a.md"},
		{name: "granted after a read, then saved", perm: agentrun.PermEdit, read: true, grant: true, save: "one\nuser\n", path: "notes/a.md",
			wantErr: "refused: notes/a.md changed since the agent read it"},
		{name: "read-only", perm: agentrun.PermReadOnly, path: "notes/a.md", wantErr: "refused: writes need permissions: edit or full"},
		{name: "outside", perm: agentrun.PermEdit, wantErr: "is outside the vault"},
		{name: "outside, at full", perm: agentrun.PermFull},
		{name: "a tie-off", perm: agentrun.PermEdit, path: "notes/a.tieoff.md", wantErr: "refused: notes/a.tieoff.md is a tie-off"},
		{name: "ignored", perm: agentrun.PermEdit, path: "notes/secret.md", wantErr: "refused: notes/secret.md is ignored"},
		{name: "too large to read, untouched", perm: agentrun.PermEdit, path: "big.md"},
		{name: "not text, untouched", perm: agentrun.PermEdit, path: "binary.md"},
		{name: "a link out", perm: agentrun.PermEdit, path: "notes/out.md", wantErr: "refused: notes/out.md is not a regular file (a symbolic link)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, v, outside := agentFSEnv(t)
			e.write("notes/a.md", "one\n")
			savedBeforeTheRun(t, e, "notes/a.md", "big.md", "binary.md")
			a := v.newAgentFS(agentrun.Agent{Permissions: tt.perm})
			defer a.Close()
			ctx := context.Background()
			read := func() {
				if _, err := a.ReadTextFile(ctx, e.abs("notes/a.md"), 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			if tt.read {
				read()
			}
			if tt.grant {
				mustDo(t, a.MayEdit(ctx, []string{e.abs("notes/a.md")}))
			}
			switch tt.save {
			case "":
			case "-":
				e.remove("notes/a.md")
			default:
				e.write("notes/a.md", tt.save)
			}
			if tt.readNow {
				read()
			}
			p := filepath.Join(outside, "data.md")
			if tt.path != "" {
				p = e.abs(tt.path)
			}
			err := a.MayEdit(ctx, []string{p})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("MayEdit(%s): %v", p, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("MayEdit(%s) = %v; want an error with %q", p, err, tt.wantErr)
			}
		})
	}
}

// TestAgentFS_AfterTheRun: a call that comes after the run is refused.
func TestAgentFS_AfterTheRun(t *testing.T) {
	e, v, _ := agentFSEnv(t)
	a := v.newAgentFS(agentrun.Agent{Permissions: agentrun.PermEdit})
	a.Close()
	if err := a.WriteTextFile(context.Background(), e.abs("late.md"), "late\n"); err == nil || !strings.Contains(err.Error(), "the run is over") {
		t.Fatalf("a write after the run: %v", err)
	}
	if e.exists("late.md") {
		t.Fatal("a write after the run created its file")
	}
}

// TestAgentFS_WriteRacesSaves: an agent reads and writes a note while the
// user keeps saving it from an editor, whose buffer grows by a line each
// save, by renaming a new file over it and by writing it in place, a
// fifth of a millisecond to two milliseconds apart (typing; see
// internal/vaultfs's TestReplaceIfUnchanged_RacingSaves). Each round ends
// with both stopped: the note then holds the user's last save, or an
// agent's write made on top of it, never an agent's write made from an
// older version.
func TestAgentFS_WriteRacesSaves(t *testing.T) {
	e, v, _ := agentFSEnv(t)
	const rounds, saves = 40, 25
	ctx := context.Background()
	name := e.abs("notes/race.md")
	applied, refusedN := 0, 0
	for round := range rounds {
		e.write("notes/race.md", fmt.Sprintf("round %d\n", round))
		a := v.newAgentFS(agentrun.Agent{Permissions: agentrun.PermEdit})
		last := ""
		var agentErr error
		stop := make(chan struct{})
		userDone := make(chan error, 1)
		go func() {
			defer close(stop)
			buf := fmt.Sprintf("round %d\n", round)
			for i := range saves {
				time.Sleep(200*time.Microsecond + time.Duration(rand.IntN(1800))*time.Microsecond)
				buf += fmt.Sprintf("user %d.%d\n", round, i)
				var err error
				if rand.IntN(2) == 0 {
					tmp := filepath.Join(filepath.Dir(name), ".race.md.swp")
					if err = os.WriteFile(tmp, []byte(buf), 0o644); err == nil {
						err = os.Rename(tmp, name)
					}
				} else {
					err = os.WriteFile(name, []byte(buf), 0o644)
				}
				if err != nil {
					userDone <- err
					return
				}
				last = buf
			}
			userDone <- nil
		}()
		for k := 0; ; k++ {
			stopped := false
			select {
			case <-stop:
				stopped = true
			default:
			}
			got, err := a.ReadTextFile(ctx, name, 0, 0)
			if err == nil {
				err = a.WriteTextFile(ctx, name, got+fmt.Sprintf("agent %d\n", k))
			}
			switch {
			case err == nil:
				applied++
			case strings.Contains(err.Error(), "the user's save is kept"):
				refusedN++
			default:
				agentErr = err
			}
			if stopped || agentErr != nil {
				break
			}
		}
		a.Close()
		if err := errors.Join(<-userDone, agentErr); err != nil {
			t.Fatal(err)
		}
		got := e.read("notes/race.md")
		if !strings.HasPrefix(got, last) {
			t.Fatalf("round %d: the note holds %q, not the user's last save %q or a write on top of it", round, got, last)
		}
	}
	t.Logf("%d agent writes applied, %d refused", applied, refusedN)
	if applied == 0 {
		t.Fatal("no agent write was applied: the test raced nothing")
	}
}

// fsAgent is an agent that, instead of running, uses the file system its
// request offers (as an ACP agent does through knotd) and replies.
type fsAgent struct {
	use   func(ctx context.Context, req agentrun.Request) error
	after *agentrun.FileSystem // the request's file system, kept for after the run
}

func (a fsAgent) Run(ctx context.Context, req agentrun.Request) (agentrun.Result, error) {
	if req.FS == nil {
		return agentrun.Result{Outcome: agentrun.OutcomeFailed, Reason: "no file system in the request", ExitCode: 1}, nil
	}
	*a.after = req.FS
	if err := a.use(ctx, req); err != nil {
		return agentrun.Result{Outcome: agentrun.OutcomeFailed, Reason: err.Error(), ExitCode: 1}, nil
	}
	return agentrun.Result{Outcome: agentrun.OutcomeOK, Reply: "done"}, nil
}

// TestAgentFS_Run: every run's request carries the vault's file system,
// at the agent's permission level, and it refuses calls once the run is
// over.
func TestAgentFS_Run(t *testing.T) {
	tests := []struct {
		perm    string
		wantErr string // of the write, "" when it goes through
	}{
		{perm: "read-only", wantErr: "refused: writes need permissions: edit or full"},
		{perm: "edit"},
		{perm: "full"},
	}
	for _, tt := range tests {
		t.Run(tt.perm, func(t *testing.T) {
			e := newEnv(t)
			e.userConfig("default_agent: a\nagents:\n  a: {preset: claude, permissions: " + tt.perm + "}\n")
			e.write("notes/n.md", "before\n")
			v := e.open()
			e.once(v, false) // knotd adopts the note
			e.write("notes/n.md", "hello\n")
			var fsys agentrun.FileSystem
			var writeErr error
			v.agent = fsAgent{after: &fsys, use: func(ctx context.Context, req agentrun.Request) error {
				got, err := req.FS.ReadTextFile(ctx, filepath.Join(req.Vault, "notes", "n.md"), 0, 0)
				if err != nil || got != "hello\n" {
					return fmt.Errorf("read the note: %q, %v", got, err)
				}
				writeErr = req.FS.WriteTextFile(ctx, filepath.Join(req.Vault, "notes", "out.md"), "from the agent\n")
				return nil
			}}
			sum := e.once(v, false)
			if sum.Ran != 1 || sum.Failed != 0 {
				t.Fatalf("summary %+v; want one run that went through", sum)
			}
			switch {
			case tt.wantErr == "" && writeErr != nil:
				t.Fatalf("the agent's write: %v", writeErr)
			case tt.wantErr != "" && (writeErr == nil || !strings.Contains(writeErr.Error(), tt.wantErr)):
				t.Fatalf("the agent's write: %v; want an error with %q", writeErr, tt.wantErr)
			case tt.wantErr == "" && e.read("notes/out.md") != "from the agent\n":
				t.Fatalf("notes/out.md = %q", e.read("notes/out.md"))
			case tt.wantErr != "" && e.exists("notes/out.md"):
				t.Fatal("a refused write created its file")
			}
			if _, err := fsys.ReadTextFile(context.Background(), e.abs("notes/n.md"), 0, 0); err == nil || !strings.Contains(err.Error(), "the run is over") {
				t.Fatalf("a read after the run: %v", err)
			}
		})
	}
}

// TestAgentFS_EditOwnNote: an agent that edits the note it answers
// changes it like anyone else: the edit stays, and the note runs again on
// it (the breakers bound an agent that does so on every run).
func TestAgentFS_EditOwnNote(t *testing.T) {
	e := newEnv(t)
	e.userConfig("default_agent: a\nagents:\n  a: {preset: claude, permissions: edit}\n")
	e.write("n.md", "before\n")
	v := e.open()
	e.once(v, false) // knotd adopts the note
	e.write("n.md", "question\n")
	var fsys agentrun.FileSystem
	edits := 0
	v.agent = fsAgent{after: &fsys, use: func(ctx context.Context, req agentrun.Request) error {
		if edits > 0 {
			return nil
		}
		edits++
		p := filepath.Join(req.Vault, "n.md")
		got, err := req.FS.ReadTextFile(ctx, p, 0, 0)
		if err != nil {
			return err
		}
		return req.FS.WriteTextFile(ctx, p, got+"edited by the agent\n")
	}}
	// The run on the question, then, in the same pass (the note changed
	// during the run), one on the agent's edit.
	sum := e.once(v, false)
	if sum.Ran != 2 || sum.OK != 2 {
		t.Fatalf("%+v; want a run on the question and one on the agent's edit", sum)
	}
	if got := e.read("n.md"); got != "question\nedited by the agent\n" {
		t.Fatalf("the note holds %q", got)
	}
	if sum := e.once(v, false); sum.Ran != 0 {
		t.Fatalf("next pass: %+v; want no run (nothing changed)", sum)
	}
}

// savedBeforeTheRun waits until the files rel were last changed before a
// run that starts now, as far as their change times tell (see
// agentfs.ChangeSlack): until then, an agent's write of a file it did not read
// through knotd is refused as a write over a save made while it ran.
func savedBeforeTheRun(t *testing.T, e *env, rels ...string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, rel := range rels {
		for {
			fi, err := os.Stat(e.abs(rel))
			mustDo(t, err)
			if !agentfs.ChangedSince(fi, time.Now().Add(-2*agentfs.ChangeSlack)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s keeps a change time in the future", rel)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
}
