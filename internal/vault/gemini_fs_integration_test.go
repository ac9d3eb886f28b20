//go:build unix

package vault

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agents/gemini/geminitest"
)

// TestGemini_RealCLIWritesThroughKnotd: the real Gemini CLI (0.61.0, the
// gemini preset at permissions: edit, against the loopback stand-in of the
// Gemini API) writes side.txt, beside the note it answers, with its
// write_file tool, which reads the file through knotd's file system
// (fs/read_text_file), asks permission for the edit, and writes it through
// knotd (fs/write_text_file): the write reaches the vault's agentFS and
// lands in the vault. With the user saving side.txt (by each way of
// saving) right after each of knotd's answers to the CLI's reads, the
// edit would lose a save the CLI did not read: knotd refuses the
// permission, the CLI writes nothing, the run goes on, and every save the
// user made is in the file. Once knotd grants the edit, the CLI reads the
// file again: with the user saving right after that read, the write comes
// after a save the CLI did not read: knotd refuses it, the CLI is told,
// and the save is kept as well.
func TestGemini_RealCLIWritesThroughKnotd(t *testing.T) {
	bin := geminitest.GeminiCLI(t)
	kinds := []string{"sed -i", "append", "truncate and write", "in place"}
	type save struct {
		kind    int  // -1: none
		atGrant bool // after each read that follows knotd's grant, else after each read
	}
	cases := []save{{kind: -1}}
	for kind := range kinds {
		cases = append(cases, save{kind: kind})
	}
	cases = append(cases, save{kind: 0, atGrant: true}, save{kind: 3, atGrant: true})
	for _, tc := range cases {
		name := "no save"
		if tc.kind >= 0 {
			name = kinds[tc.kind] + map[bool]string{false: " after the read", true: " after the grant"}[tc.atGrant]
		}
		t.Run(name, func(t *testing.T) {
			api := geminitest.NewGemini(t)
			e := newEnv(t)
			var env []string
			for _, kv := range api.GeminiEnv(t.TempDir(), true) {
				k, v, _ := strings.Cut(kv, "=")
				env = append(env, fmt.Sprintf("%s: %q", k, v))
			}
			e.userConfig(fmt.Sprintf("default_agent: g\nagents:\n  g:\n    preset: gemini\n    command: [%q]\n    permissions: edit\n    env: {%s}\n",
				bin, strings.Join(env, ", ")))
			e.write("side.txt", "user line 1\n")
			e.onceFresh() // knotd adopts the notes
			savedBeforeTheRun(t, e, "side.txt")
			e.write("in.md", "answer this\n")
			side := e.abs("side.txt")
			api.QueueFunctionCall(geminitest.GeminiFunctionCall{Name: "write_file",
				Args: map[string]any{"file_path": side, "content": "the model's text\n"}})

			v := e.open()
			fsys := &savingFS{side: side}
			saves := 0
			saveOnce := func() error {
				saves++
				return saveLine(side, []int{0, 1, 2, 3}[tc.kind], fmt.Sprintf("user save %d\n", saves))
			}
			switch {
			case tc.kind < 0:
			case tc.atGrant:
				fsys.save = func(int) error { // fsys.mu is held
					if fsys.grantedAt.IsZero() {
						return nil
					}
					return saveOnce()
				}
			default:
				fsys.save = func(int) error { return saveOnce() }
			}
			v.agent = fsAgentWrap{inner: v.runner.Load(), wrap: func(fs agentrun.FileSystem) agentrun.FileSystem { fsys.inner = fs; return fsys }}
			sum, err := v.Once(context.Background(), OnceOptions{})
			mustDo(t, err)
			if sum.Ran != 1 || sum.Failed != 0 {
				t.Fatalf("runs = %+v; want one ok run", sum.Runs)
			}
			fsys.mu.Lock()
			defer fsys.mu.Unlock()
			got := e.read("side.txt")
			want := "user line 1\n"
			for n := 1; n <= saves; n++ {
				want += fmt.Sprintf("user save %d\n", n)
			}
			if tc.kind >= 0 && (saves == 0 || got != want) {
				t.Errorf("side.txt = %q; want every user save %q (%d)", got, want, saves)
			}
			switch {
			case fsys.reads == 0 || len(fsys.asks) != 1:
				t.Fatalf("the CLI read side.txt through knotd %d times and asked to edit it %d times; want reads and one request", fsys.reads, len(fsys.asks))
			case tc.kind >= 0 && !tc.atGrant:
				if err := fsys.asks[0]; err == nil || !strings.Contains(err.Error(), "the user's save is kept") {
					t.Errorf("the CLI's request to edit: %v; want it refused, the user's save kept", err)
				}
				if len(fsys.writes) != 0 {
					t.Errorf("the CLI wrote side.txt %d times after knotd refused the edit; want none", len(fsys.writes))
				}
				return
			case fsys.asks[0] != nil || len(fsys.writes) != 1:
				t.Fatalf("the CLI's request to edit: %v, then %d writes; want it granted, then one write", fsys.asks[0], len(fsys.writes))
			case tc.kind < 0:
				if fsys.writes[0] != nil || got != "the model's text\n" {
					t.Fatalf("without a save: the write %v, side.txt = %q; want the model's text written", fsys.writes[0], got)
				}
			default:
				if err := fsys.writes[0]; err == nil || !strings.Contains(err.Error(), "the user's save is kept") {
					t.Errorf("the CLI's write: %v; want it refused, the user's save kept", err)
				}
			}
		})
	}
}

// fsAgentWrap runs inner with the request's file system wrapped.
type fsAgentWrap struct {
	inner AgentRunner
	wrap  func(agentrun.FileSystem) agentrun.FileSystem
}

func (a fsAgentWrap) Run(ctx context.Context, req agentrun.Request) (agentrun.Result, error) {
	req.FS = a.wrap(req.FS)
	return a.inner.Run(ctx, req)
}

// savingFS passes the agent's calls on to knotd's file system, and after
// each read of side it serves, the user saves side (save, when set); just
// before a write of side reaches knotd, the user saves it (saveAtWrite,
// when set), and about a request for permission to edit it (saveAtAsk,
// saveAtGrant).
type savingFS struct {
	inner       agentrun.FileSystem
	side        string
	save        func(n int) error
	saveAtWrite func() error
	saveAtAsk   func() error
	saveAtGrant func() error

	mu     sync.Mutex
	reads  int
	writes []error // the error of each write of side
	asks   []error // the answer to each request for permission to edit
	// grantedAt is when knotd last granted an edit; wroteAt when it last
	// answered a write of side.
	grantedAt, wroteAt time.Time
}

func (f *savingFS) ReadTextFile(ctx context.Context, p string, line, limit int) (string, error) {
	s, err := f.inner.ReadTextFile(ctx, p, line, limit)
	if err != nil || filepath.Clean(p) != f.side {
		return s, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.save != nil {
		if serr := f.save(f.reads); serr != nil {
			return "", fmt.Errorf("the test's save: %w", serr)
		}
	}
	return s, nil
}

// MayEdit: just before a request for permission to edit side reaches
// knotd, the user saves it (saveAtAsk, when set); just after knotd grants
// one, before the agent hears of it, as well (saveAtGrant).
func (f *savingFS) MayEdit(ctx context.Context, paths []string) error {
	side := slices.ContainsFunc(paths, func(p string) bool { return filepath.Clean(p) == f.side })
	if f.saveAtAsk != nil && side {
		if err := f.saveAtAsk(); err != nil {
			return fmt.Errorf("the test's save: %w", err)
		}
	}
	err := f.inner.MayEdit(ctx, paths)
	f.mu.Lock()
	f.asks = append(f.asks, err)
	if err == nil {
		f.grantedAt = time.Now()
	}
	f.mu.Unlock()
	if err == nil && f.saveAtGrant != nil && side {
		if serr := f.saveAtGrant(); serr != nil {
			return fmt.Errorf("the test's save: %w", serr)
		}
	}
	return err
}

func (f *savingFS) WriteTextFile(ctx context.Context, p, content string) error {
	if f.saveAtWrite != nil && filepath.Clean(p) == f.side {
		if err := f.saveAtWrite(); err != nil {
			return fmt.Errorf("the test's save: %w", err)
		}
	}
	err := f.inner.WriteTextFile(ctx, p, content)
	if filepath.Clean(p) == f.side {
		f.mu.Lock()
		f.wroteAt = time.Now()
		f.writes = append(f.writes, err)
		f.mu.Unlock()
	}
	return err
}
