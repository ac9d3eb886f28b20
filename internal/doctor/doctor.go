// Package doctor checks what knotd needs to answer a vault and says what
// to fix: the configuration and its trust, each agent's program and
// version (and, when asked, that it answers), the file-watch limits
// against the vault's size, the state store's health, and how the vault
// is synced. It changes nothing.
package doctor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/ignore"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/statedir"
	"github.com/knotd/knotd/internal/strand"
)

// Status says whether a finding needs fixing: ok, warn (knotd works, but
// something is worth doing), or fail (knotd cannot do its job).
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Finding is one check's result: what was checked, what was found, and
// what to do about it.
type Finding struct {
	Check  string `json:"check"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Options say what to check.
type Options struct {
	// Root is the vault.
	Root string
	// ConfigDir and ConfigFile locate the user's configuration as for
	// config.Load ("": the defaults).
	ConfigDir, ConfigFile string
	// StateHome is knotd's state directory ("": the user's).
	StateHome string
	// Answer runs each agent once on a trivial prompt.
	Answer bool
	// Limits reads the system's file-watch limits (nil: the system's
	// own, see systemLimits).
	Limits func() ([]Limit, error)
	// Timeout bounds each program the checks run (default 20 s; an
	// agent's answer gets the agent's own timeout).
	Timeout time.Duration
}

// Limit is one file-watch limit: its name (what to raise) and value.
type Limit struct {
	Name  string
	Value int64
	// PerDir says the limit counts directories (inotify watches); else it
	// counts files and directories (kqueue's open files).
	PerDir bool
	// Fix is how to raise it.
	Fix string
}

// Failed reports whether any finding is a failure.
func Failed(fs []Finding) bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Status == Fail })
}

// Run runs every check on the vault at o.Root.
func Run(ctx context.Context, o Options) []Finding {
	if o.Timeout <= 0 {
		o.Timeout = 20 * time.Second
	}
	if o.Limits == nil {
		o.Limits = systemLimits
	}
	var out []Finding
	cfg, f := checkConfig(o)
	out = append(out, f)
	if cfg != nil {
		out = append(out, checkAgents(ctx, o, cfg)...)
		out = append(out, checkLimits(o, cfg)...)
	}
	out = append(out, checkState(ctx, o))
	out = append(out, checkSync(o, cfg)...)
	out = append(out, checkGitMerge(ctx, o)...)
	return out
}

// checkConfig loads the configuration as knotd would.
func checkConfig(o Options) (*config.Config, Finding) {
	f := Finding{Check: "configuration"}
	cfg, err := config.Load(config.LoadOptions{Vault: o.Root, ConfigDir: o.ConfigDir, UserFile: o.ConfigFile})
	if err == nil {
		_, err = cfg.Agent("")
	}
	switch {
	case errors.Is(err, config.ErrUntrusted):
		f.Status, f.Detail = Fail, err.Error()
		f.Fix = "read " + config.VaultConfigPath(o.Root) + ", then run: knotd trust " + o.Root
		return nil, f
	case err != nil:
		f.Status, f.Detail, f.Fix = Fail, err.Error(), "correct the file and line the message names"
		return nil, f
	}
	f.Status = OK
	f.Detail = "loads"
	if len(cfg.Files) > 0 {
		f.Detail += ": " + strings.Join(cfg.Files, ", ")
	} else {
		f.Detail += " (no config file: the defaults)"
	}
	if len(cfg.Clamped) > 0 {
		f.Status = Warn
		f.Detail += "; the vault config asks for more than yours allows: " + strings.Join(cfg.Clamped, "; ")
		f.Fix = "lower it in the vault config, or trust the file (knotd trust) if you want it to"
	}
	return cfg, f
}

// checkAgents finds each agent's program and, for a preset's CLI, its
// version (a plain command is only found, never run: it might take
// --version for a prompt), and with o.Answer runs it once.
func checkAgents(ctx context.Context, o Options, cfg *config.Config) []Finding {
	var out []Finding
	for _, name := range slices.Sorted(maps.Keys(cfg.Agents)) {
		a := cfg.Agents[name]
		f := Finding{Check: "agent " + name}
		if name == cfg.DefaultAgent {
			f.Check += " (the default)"
		}
		prog := a.Program()
		if prog == "" {
			f.Status, f.Detail = OK, "built in (the digest): nothing to install"
			out = append(out, f)
			continue
		}
		path, err := exec.LookPath(prog)
		if err != nil {
			f.Status, f.Detail = Fail, fmt.Sprintf("%s: not found on PATH (%v)", prog, err)
			f.Fix = "install it, or give its full path in the agent's command:; a service needs PATH to include its folder (knotd service install sets one)"
			out = append(out, f)
			continue
		}
		f.Status, f.Detail = OK, path
		if a.Preset == "" {
			// A plain command is the user's own program: it may read
			// --version as a prompt (and spend money answering it), so
			// it is not run; LookPath found it, and executable.
			f.Detail += " (found, executable; a command of yours is not run to ask its version, which it might take for a prompt: --agents-answer runs it once)"
		} else if v := version(ctx, path, a.Env, o.Timeout); v != "" {
			f.Detail += " (" + v + ")"
		} else {
			f.Status, f.Detail = Warn, path+" (it says no version with --version)"
			f.Fix = "check that " + path + " is the agent's CLI"
		}
		out = append(out, f)
		if o.Answer {
			out = append(out, answers(ctx, o, name, a))
		}
	}
	return out
}

// maxVersion bounds what is read of a program's --version.
const maxVersion = 4 << 10

// version runs path --version, directly (no shell), with the agent's own
// environment variables added, and returns its first line, "" when it
// fails.
func version(ctx context.Context, path string, env map[string]string, timeout time.Duration) string {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out boundedBuffer
	out.limit = maxVersion
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Stdin = nil
	if err := cmd.Run(); err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	return strings.TrimSpace(line)
}

// boundedBuffer keeps the first limit bytes written to it.
type boundedBuffer struct {
	bytes.Buffer
	limit int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// answers runs the agent once on a trivial prompt, as knotd runs it
// (read-only at most), in the vault.
func answers(ctx context.Context, o Options, name string, a agentrun.Agent) Finding {
	f := Finding{Check: "agent " + name + " answers"}
	if a.Permissions != agentrun.PermReadOnly && a.Permissions != "" {
		a.Permissions = agentrun.PermReadOnly // a check needs no more
	}
	const note = "knotd-doctor.md"
	req := agentrun.Request{
		RunID: "00000000-0000-7000-8000-000000000000", Vault: o.Root, Agent: a, Turn: 1, FiredBy: agentrun.FiredByUser,
		Session: "00000000-0000-4000-8000-000000000000", Now: time.Now(),
		Event: strand.Event{Type: strand.Created, Strand: strand.Strand{Path: note, Abs: filepath.Join(o.Root, note),
			Content: []byte("This is knotd doctor checking that you answer. Reply with the word ok, and nothing else.\n")}, Time: time.Now()},
	}
	if dir, err := os.MkdirTemp("", "knotd-doctor-*"); err == nil {
		defer os.RemoveAll(dir) // a scratch folder of the check's own
		req.StateDir = dir
	}
	res, err := (&agentrun.Runner{}).Run(ctx, req)
	switch {
	case err != nil:
		f.Status, f.Detail = Fail, err.Error()
	case res.Outcome != agentrun.OutcomeOK:
		f.Status, f.Detail = Fail, fmt.Sprintf("%s: %s", res.Outcome, res.Reason)
		f.Fix = "run the agent's CLI by hand once: it may need a login or an API key"
	default:
		reply, _, _ := strings.Cut(strings.TrimSpace(res.Reply), "\n")
		f.Status, f.Detail = OK, fmt.Sprintf("replied %q in %v", reply, res.Duration.Round(time.Millisecond))
	}
	return f
}

// checkLimits compares the file-watch limits with what this vault needs.
func checkLimits(o Options, cfg *config.Config) []Finding {
	if cfg.Poll > 0 {
		return []Finding{{Check: "watch limits", Status: OK, Detail: fmt.Sprintf("knotd polls this vault every %v (poll:), no watches", cfg.Poll)}}
	}
	limits, err := o.Limits()
	if err != nil {
		return []Finding{{Check: "watch limits", Status: Warn, Detail: "cannot read them: " + err.Error()}}
	}
	if len(limits) == 0 {
		return nil
	}
	dirs, files, err := count(o.Root, cfg)
	if err != nil {
		return []Finding{{Check: "watch limits", Status: Warn, Detail: "cannot count the vault's folders: " + err.Error()}}
	}
	var out []Finding
	for _, l := range limits {
		need := int64(dirs)
		what := fmt.Sprintf("%d folders", dirs)
		if !l.PerDir {
			need, what = int64(dirs+files), fmt.Sprintf("%d folders and files", dirs+files)
		}
		f := Finding{Check: "watch limits", Detail: fmt.Sprintf("%s is %d; this vault has %s to watch", l.Name, l.Value, what)}
		switch {
		case l.Value < need:
			f.Status, f.Fix = Fail, l.Fix+" (knotd polls the folders it cannot watch meanwhile)"
		case l.Value < 2*need:
			f.Status, f.Fix = Warn, "little room left for the vault to grow, or for other programs' watches: "+l.Fix
		default:
			f.Status = OK
		}
		out = append(out, f)
	}
	return out
}

// count counts the folders and notes knotd watches in the vault: what
// its ignore rules keep.
func count(root string, cfg *config.Config) (dirs, files int, err error) {
	r := &ignore.Rules{ConfigDir: cfg.ObsidianDir, Patterns: cfg.Ignore}
	err = r.Walk(root, "", ignore.WalkOptions{}, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: knotd says so when it watches
		}
		if d.IsDir() {
			dirs++
		} else {
			files++
		}
		return nil
	})
	return dirs, files, err
}

// checkState checks the state store, or asks the running knotd.
func checkState(ctx context.Context, o Options) Finding {
	f := Finding{Check: "state store"}
	home := o.StateHome
	if home == "" {
		h, err := statedir.Home()
		if err != nil {
			f.Status, f.Detail = Warn, err.Error()
			return f
		}
		home = h
	}
	folder, ok, err := statedir.Find(home, o.Root)
	switch {
	case err != nil:
		f.Status, f.Detail = Warn, err.Error()
		return f
	case !ok:
		f.Status, f.Detail = OK, "knotd has not run on this vault on this machine yet"
		return f
	}
	c := &control.Client{Path: control.SocketPath(folder.Dir)}
	if st, err := c.Status(ctx); err == nil {
		f.Status, f.Detail = OK, fmt.Sprintf("in use by the running knotd (pid %d, since %s)", st.PID, st.Since.UTC().Format(time.RFC3339))
		return f
	}
	// Read-only: a check never locks out a knotd that starts meanwhile,
	// and changes nothing (an older store is prepared by knotd itself).
	s, err := state.OpenReadOnly(folder.StateFile())
	switch {
	case errors.Is(err, state.ErrNotReady) || errors.Is(err, fs.ErrNotExist):
		f.Status, f.Detail = OK, folder.StateFile()+": not prepared yet; knotd prepares it when it next starts"
		return f
	case err != nil:
		return stateErr(f, folder, err)
	}
	err = s.Check(false)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return stateErr(f, folder, err)
	}
	f.Status, f.Detail = OK, folder.StateFile()+": sound"
	return f
}

func stateErr(f Finding, folder statedir.Folder, err error) Finding {
	f.Detail = err.Error()
	switch {
	case errors.Is(err, state.ErrCorrupt):
		f.Status, f.Fix = Fail, "knotd moves it aside and rebuilds the state from the vault's tie-offs when it starts (notes answered there do not run again)"
	case errors.Is(err, state.ErrBusy):
		f.Status, f.Detail = Warn, "in use by another process (a knotd of an older version, or one whose control socket is not reachable): "+folder.StateFile()
	default:
		f.Status = Fail
	}
	return f
}

// checkSync says how the vault is synced, and what knotd asks of it.
func checkSync(o Options, cfg *config.Config) []Finding {
	var out []Finding
	exists := func(name string) bool { _, err := os.Lstat(filepath.Join(o.Root, name)); return err == nil }
	devices := 0
	if es, err := os.ReadDir(filepath.Join(o.Root, strand.StateDir, "devices")); err == nil {
		for _, e := range es {
			if strings.HasSuffix(e.Name(), ".json") {
				devices++
			}
		}
	}
	runner := cfg != nil && cfg.Runner != ""
	found := false
	if exists(".git") || gitWorkTree(o.Root) {
		found = true
		f := Finding{Check: "sync: git", Status: OK, Detail: "a git work tree: commit .knot/config.yaml and the tie-offs with the notes; the heartbeats keep themselves out of git"}
		if devices > 1 && !runner && !exists(".stfolder") {
			f.Status = Warn
			f.Detail = fmt.Sprintf("a git work tree with %d devices' heartbeats: devices of a git vault do not see each other's heartbeats between pulls", devices)
			f.Fix = "run knotd on one device only, or name it with runner: in .knot/config.yaml"
		}
		out = append(out, f)
	}
	if exists(".stfolder") {
		found = true
		out = append(out, Finding{Check: "sync: Syncthing", Status: OK, Detail: "a Syncthing folder: nothing to set up; knotd's machine files are not in the vault, and heartbeats and tie-offs have one writer each"})
	}
	if strings.Contains(o.Root, string(filepath.Separator)+"Mobile Documents"+string(filepath.Separator)) || strings.Contains(o.Root, "com~apple~CloudDocs") {
		found = true
		out = append(out, Finding{Check: "sync: iCloud", Status: Warn,
			Detail: "an iCloud Drive folder: iCloud may evict notes to .icloud placeholders, which knotd skips until they are downloaded",
			Fix:    "keep the vault's folder downloaded (Finder: Keep Downloaded)"})
	}
	if !found {
		out = append(out, Finding{Check: "sync", Status: OK, Detail: "no git, Syncthing or iCloud folder seen: a vault on one machine (other sync tools work too; see docs/syncing.md)"})
	}
	return out
}

// gitWorkTree reports whether root is inside a git work tree (a .git
// above it).
func gitWorkTree(root string) bool {
	for d := root; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return true
		}
		p := filepath.Dir(d)
		if p == d {
			return false
		}
		d = p
	}
}

// checkGitMerge says, for a vault in a git work tree, whether git merges
// its tie-offs by run id (knotd git setup: the .gitattributes line and
// the merge driver in the repository's config), and whether the driver's
// program is still there. Without git, or outside a work tree, it says
// nothing.
func checkGitMerge(ctx context.Context, o Options) []Finding {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	run := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, git, append([]string{"-C", o.Root}, args...)...).Output()
		return strings.TrimSpace(string(out)), err
	}
	if inside, err := run("rev-parse", "--is-inside-work-tree"); err != nil || inside != "true" {
		return nil
	}
	f := Finding{Check: "git: tie-off merges"}
	attr, _ := run("check-attr", "merge", "--", "x.tieoff.md")
	driver, _ := run("config", "merge.knotd-tieoff.driver")
	fix := "knotd git setup " + o.Root + " (in each clone), and commit .gitattributes"
	switch {
	case !strings.HasSuffix(attr, ": merge: knotd-tieoff") || driver == "":
		f.Status = Warn
		f.Detail = "git merges tie-offs line by line: two clones that both answered notes conflict on them at a merge, pull or rebase"
		f.Fix = fix
	default:
		f.Status, f.Detail = OK, "tie-offs merge by run id (merge.knotd-tieoff.driver: "+driver+")"
		if exe, ok := shellWord(driver); ok && filepath.IsAbs(exe) {
			if _, err := os.Stat(exe); err != nil {
				f.Status = Warn
				f.Detail = "the tie-off merge driver's program is gone (" + exe + "): git merges of tie-offs fail"
				f.Fix = fix
			}
		}
	}
	return []Finding{f}
}

// shellWord returns the first word of a POSIX shell command line made of
// plain characters, single quotes and backslashes (as knotd git setup
// writes it); false for anything else.
func shellWord(s string) (string, bool) {
	var b strings.Builder
	for len(s) > 0 && s[0] != ' ' {
		switch c := s[0]; {
		case c == '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return "", false
			}
			b.WriteString(s[1 : 1+end])
			s = s[2+end:]
		case c == '\\' && len(s) > 1:
			b.WriteByte(s[1])
			s = s[2:]
		case strings.IndexByte("\"$`\t\n;&|<>()*?[", c) >= 0:
			return "", false
		default:
			b.WriteByte(c)
			s = s[1:]
		}
	}
	return b.String(), b.Len() > 0
}
