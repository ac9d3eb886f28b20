package doctor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/statedir"
	"github.com/stretchr/testify/require"
)

// envFake makes the test binary a fake agent CLI that prints a version;
// envRan one that writes its arguments to the file it names.
const (
	envFake = "KNOTD_DOCTOR_FAKE"
	envRan  = "KNOTD_DOCTOR_RAN"
)

func TestMain(m *testing.M) {
	if os.Getenv(envFake) == "version" {
		fmt.Println("fake-cli 1.2.3 (for knotd doctor's tests)")
		os.Exit(0)
	}
	if ran := os.Getenv(envRan); ran != "" {
		// A plain command's fake: it records that it ran, and how.
		if err := os.WriteFile(ran, []byte(strings.Join(os.Args[1:], " ")), 0o600); err != nil {
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// env is a vault with a user config directory and a state directory.
type env struct {
	root, configDir, home string
}

func newEnv(t *testing.T) env {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return env{root: root, configDir: t.TempDir(), home: t.TempDir()}
}

func (e env) write(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
}

func (e env) run(t *testing.T, limits ...Limit) []Finding {
	t.Helper()
	return Run(context.Background(), Options{Root: e.root, ConfigDir: e.configDir, StateHome: e.home,
		Limits: func() ([]Limit, error) { return limits, nil }, Timeout: 30 * time.Second})
}

// find returns the findings whose check begins with check.
func find(fs []Finding, check string) []Finding {
	var out []Finding
	for _, f := range fs {
		if strings.HasPrefix(f.Check, check) {
			out = append(out, f)
		}
	}
	return out
}

func TestDoctor_Agents(t *testing.T) {
	e := newEnv(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	ran := filepath.Join(t.TempDir(), "ran")
	e.write(t, filepath.Join(e.configDir, "config.yaml"), fmt.Sprintf(`default_agent: fake
agents:
  fake:
    preset: claude
    command: [%q]
    env: {%s: version}
  mine:
    command: [%q]
    env: {%s: %q}
  missing:
    command: [knotd-doctor-no-such-program]
`, exe, envFake, exe, envRan, ran))
	fs := e.run(t)
	// A plain command is found, not run: it might read --version as a
	// prompt.
	mine := find(fs, "agent mine")
	require.Len(t, mine, 1)
	require.Equal(t, OK, mine[0].Status, "%+v", mine[0])
	require.Contains(t, mine[0].Detail, exe+" (found, executable; a command of yours is not run")
	_, err = os.Stat(ran)
	require.ErrorIs(t, err, os.ErrNotExist, "knotd doctor ran the plain command")
	fake := find(fs, "agent fake")
	require.Len(t, fake, 1)
	require.Equal(t, OK, fake[0].Status, "%+v", fake[0])
	require.Contains(t, fake[0].Detail, "fake-cli 1.2.3")
	require.Contains(t, fake[0].Check, "(the default)")
	missing := find(fs, "agent missing")
	require.Len(t, missing, 1)
	require.Equal(t, Fail, missing[0].Status)
	require.Contains(t, missing[0].Fix, "PATH")
	require.True(t, Failed(fs))
	require.Equal(t, OK, find(fs, "agent digest")[0].Status)
}

func TestDoctor_Config(t *testing.T) {
	e := newEnv(t)
	e.write(t, filepath.Join(e.root, ".knot", "config.yaml"), "agents:\n  planted: {command: [sh]}\n")
	f := find(e.run(t), "configuration")[0]
	require.Equal(t, Fail, f.Status)
	require.Contains(t, f.Fix, "knotd trust "+e.root)

	e = newEnv(t)
	e.write(t, filepath.Join(e.configDir, "config.yaml"), "debounce: [\n")
	f = find(e.run(t), "configuration")[0]
	require.Equal(t, Fail, f.Status)
	require.Contains(t, f.Detail, "line 1")
}

func TestDoctor_Limits(t *testing.T) {
	e := newEnv(t)
	for _, d := range []string{"a", "b", "b/c"} {
		require.NoError(t, os.MkdirAll(filepath.Join(e.root, d), 0o755))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(e.root, ".git", "objects"), 0o755)) // ignored: not watched
	tests := []struct {
		value int64
		want  Status
	}{{2, Fail}, {5, Warn}, {100, OK}}
	for _, tt := range tests {
		f := find(e.run(t, Limit{Name: "fs.inotify.max_user_watches", Value: tt.value, PerDir: true, Fix: "raise it"}), "watch limits")
		require.Len(t, f, 1)
		require.Equal(t, tt.want, f[0].Status, "limit %d: %+v", tt.value, f[0])
		require.Contains(t, f[0].Detail, "4 folders") // the vault and a, b, b/c
	}
}

func TestDoctor_State(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, OK, find(e.run(t), "state store")[0].Status)

	lock, err := statedir.Acquire(e.home, e.root)
	require.NoError(t, err)
	folder := lock.Folder
	require.NoError(t, lock.Release())
	e.write(t, folder.StateFile(), strings.Repeat("not a database ", 1000))
	f := find(e.run(t), "state store")[0]
	require.Equal(t, Fail, f.Status, "%+v", f)
	require.Contains(t, f.Fix, "moves it aside")

	// A running knotd answers for it.
	ln, err := control.Listen(control.SocketPath(folder.Dir))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- control.Serve(ctx, ln, fakeDaemon{}, nil) }()
	defer func() { cancel(); require.NoError(t, <-done) }()
	f = find(e.run(t), "state store")[0]
	require.Equal(t, OK, f.Status, "%+v", f)
	require.Contains(t, f.Detail, "pid 4242")
}

type fakeDaemon struct{ control.Backend }

func (fakeDaemon) Status(context.Context) (control.Status, error) {
	return control.Status{PID: 4242, Since: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)}, nil
}

func TestDoctor_Sync(t *testing.T) {
	tests := []struct {
		name   string
		setup  func(t *testing.T, e env)
		check  string
		status Status
	}{
		{"nothing", func(*testing.T, env) {}, "sync", OK},
		{"syncthing", func(t *testing.T, e env) { require.NoError(t, os.Mkdir(filepath.Join(e.root, ".stfolder"), 0o755)) }, "sync: Syncthing", OK},
		{"git", func(t *testing.T, e env) { require.NoError(t, os.Mkdir(filepath.Join(e.root, ".git"), 0o755)) }, "sync: git", OK},
		{"git with two devices and no runner", func(t *testing.T, e env) {
			require.NoError(t, os.Mkdir(filepath.Join(e.root, ".git"), 0o755))
			e.write(t, filepath.Join(e.root, ".knot", "devices", "a.json"), "{}")
			e.write(t, filepath.Join(e.root, ".knot", "devices", "b.json"), "{}")
		}, "sync: git", Warn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tt.setup(t, e)
			f := find(e.run(t), tt.check)
			require.NotEmpty(t, f)
			require.Equal(t, tt.status, f[0].Status, "%+v", f[0])
		})
	}
}

// TestDoctor_StateReadOnly: doctor reads the state store read-only, as
// knotd status does: it checks a store another reader holds open (where
// an exclusive open would wait and say "in use"), and changes nothing.
func TestDoctor_StateReadOnly(t *testing.T) {
	e := newEnv(t)
	lock, err := statedir.Acquire(e.home, e.root)
	require.NoError(t, err)
	folder := lock.Folder
	s, err := state.Open(folder.StateFile())
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, lock.Release())
	before, err := os.ReadFile(folder.StateFile())
	require.NoError(t, err)

	reader, err := state.OpenReadOnly(folder.StateFile())
	require.NoError(t, err)
	f := find(e.run(t), "state store")[0]
	require.NoError(t, reader.Close())
	require.Equal(t, OK, f.Status, "%+v", f)
	require.Contains(t, f.Detail, "sound")
	after, err := os.ReadFile(folder.StateFile())
	require.NoError(t, err)
	require.Equal(t, before, after, "doctor changed the state store")
}

// TestDoctor_GitMergeDriver: in a git work tree (the real git), doctor
// advises knotd git setup until git merges tie-offs by run id, and says
// when the driver's program is gone; outside one it says nothing.
func TestDoctor_GitMergeDriver(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skipf("SKIPPED: the real git is not installed (%v)", err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	git := func(dir string, args ...string) {
		t.Helper()
		out, err := exec.Command(gitBin, append([]string{"-C", dir}, args...)...).CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	self, err := os.Executable()
	require.NoError(t, err)
	setUp := func(driver string) func(t *testing.T, e env) {
		return func(t *testing.T, e env) {
			git(e.root, "init", "-q")
			e.write(t, filepath.Join(e.root, ".gitattributes"), "*.md text\n*.tieoff.md merge=knotd-tieoff\n")
			git(e.root, "config", "merge.knotd-tieoff.driver", driver)
		}
	}
	tests := []struct {
		name   string
		setup  func(t *testing.T, e env)
		status Status // "": no finding
		says   string
	}{
		{"no git", func(*testing.T, env) {}, "", ""},
		{"a .git folder git does not read", func(t *testing.T, e env) { require.NoError(t, os.Mkdir(filepath.Join(e.root, ".git"), 0o755)) }, "", ""},
		{"a work tree without the setup", func(t *testing.T, e env) { git(e.root, "init", "-q") }, Warn, "knotd git setup"},
		{"the attribute without the driver", func(t *testing.T, e env) {
			git(e.root, "init", "-q")
			e.write(t, filepath.Join(e.root, ".gitattributes"), "*.tieoff.md merge=knotd-tieoff\n")
		}, Warn, "knotd git setup"},
		{"set up", setUp("'" + self + "' merge-tieoff %O %A %B %P"), OK, "by run id"},
		{"the driver's program is gone", setUp("'/nonexistent/it'\\''s/knotd' merge-tieoff %O %A %B %P"), Warn, "/nonexistent/it's/knotd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			tt.setup(t, e)
			f := find(e.run(t), "git: tie-off merges")
			if tt.status == "" {
				require.Empty(t, f)
				return
			}
			require.Len(t, f, 1)
			require.Equal(t, tt.status, f[0].Status, "%+v", f[0])
			require.Contains(t, f[0].Detail+" "+f[0].Fix, tt.says)
		})
	}
}
