package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/knotd/knotd/bench/internal/agentruns"
	"github.com/knotd/knotd/bench/internal/knotdlog"
	"github.com/knotd/knotd/bench/internal/stats"
	"github.com/knotd/knotd/bench/internal/vaultgen"
)

// env is one knotbench invocation: its temporary directory, the binaries
// it built, the user config it generated and the vaults, generated once
// and shared by the scenarios.
type env struct {
	opts       options
	module     string // the knotd module's directory
	tmp        string
	xdg        string // empty XDG_CONFIG_HOME for knotd
	configFile string // the user config naming the instant agent
	agent      string // the instant agent binary
	knotd      launcher
	profiled   launcher
	results    string
	progress   io.Writer
	vaults     map[int]*benchVault
	seq        int // makes probe names unique
	profSeq    int
	notes      []string // printed under the table
}

// benchVault is a generated, adopted vault.
type benchVault struct {
	root string
	rels []string
	dirs int
	// probes counts the start-up probe strands added to the vault (see
	// watch): strands beyond rels.
	probes int
	adopt  onceResult // knotd's first contact
	next   int        // pick's position
}

// newEnv creates the temporary directory and builds knotd and the
// instant agent.
func newEnv(ctx context.Context, o options, progress io.Writer) (e *env, err error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return nil, fmt.Errorf("run knotbench inside the knotd module (go env GOMOD: %q, %v)", gomod, err)
	}
	e = &env{opts: o, module: filepath.Dir(gomod), progress: progress, vaults: map[int]*benchVault{}}
	if e.tmp, err = os.MkdirTemp(o.work, "knotbench-"); err != nil {
		return nil, fmt.Errorf("temporary directory: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.close())
		}
	}()
	e.results = o.results
	if e.results == "" {
		e.results = filepath.Join(e.module, ".cache", "bench", time.Now().UTC().Format("20060102T150405Z"))
	}
	if err := os.MkdirAll(e.results, 0o755); err != nil {
		return nil, fmt.Errorf("results directory: %w", err)
	}
	bin := filepath.Join(e.tmp, "bin")
	e.agent = filepath.Join(bin, "instantagent")
	knotd := filepath.Join(bin, "knotd")
	e.logf("building knotd and the instant agent in %s", bin)
	for target, pkg := range map[string]string{knotd: "./cmd/knotd", e.agent: "./bench/instantagent"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", target, pkg)
		cmd.Dir = e.module
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find knotbench's own binary: %w", err)
	}
	e.knotd = launcher{name: "knotd", argv: []string{knotd}}
	e.profiled = launcher{name: "knotd (profiled)", argv: []string{self, "knotd-profiled"}, seq: &e.profSeq}
	e.xdg = filepath.Join(e.tmp, "xdg")
	if err := os.Mkdir(e.xdg, 0o700); err != nil {
		return nil, err
	}
	e.configFile = filepath.Join(e.tmp, "knotd.yaml")
	cfg := fmt.Sprintf("default_agent: instant\nagents:\n  instant:\n    command: [%s]\n    prompt: stdin\n    output: text\n", strconv.Quote(e.agent))
	if err := os.WriteFile(e.configFile, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	return e, nil
}

// close removes the temporary directory unless -keep was given.
func (e *env) close() error {
	if e.opts.keep {
		e.logf("kept %s", e.tmp)
		return nil
	}
	if err := os.RemoveAll(e.tmp); err != nil {
		return fmt.Errorf("remove %s: %w", e.tmp, err)
	}
	return nil
}

// logf reports progress on standard error.
func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(e.progress, "%s knotbench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// path returns a fresh path in the temporary directory.
// stateHome is knotd's state directory for the bench (XDG_STATE_HOME's
// knotd), inside the bench's temporary directory.
func (e *env) stateHome() string { return filepath.Join(e.xdg, "state", "knotd") }

func (e *env) path(name string) string {
	e.seq++
	return filepath.Join(e.tmp, fmt.Sprintf("%s-%d", name, e.seq))
}

// vault returns the adopted synthetic vault of n strands, generating it
// (and letting knotd adopt it) on first use.
func (e *env) vault(ctx context.Context, n int) (*benchVault, error) {
	if v := e.vaults[n]; v != nil {
		return v, nil
	}
	v := &benchVault{root: filepath.Join(e.tmp, "vault-"+strconv.Itoa(n))}
	e.logf("generating a vault of %s strands", stats.Thousands(n))
	var err error
	if v.rels, err = vaultgen.Generate(v.root, n, uint64(n)); err != nil {
		return nil, err
	}
	v.dirs = vaultgen.DirsOf(v.rels)
	if err := e.adopt(ctx, v); err != nil {
		return nil, err
	}
	e.vaults[n] = v
	return v, nil
}

// adopt lets knotd adopt the vault (first contact: every strand recorded,
// no runs) and checks that it adopted them all.
func (e *env) adopt(ctx context.Context, v *benchVault) error {
	e.logf("knotd adopts %s", v.root)
	res, err := e.once(ctx, e.knotd, v.root, e.path("adopt-stamps"))
	if err != nil {
		return err
	}
	l, ok := knotdlog.Find(res.lines, "first contact")
	if want := len(v.rels) + v.probes; !ok || l.Strands != want {
		return fmt.Errorf("knotd adopted %d strands of %s; want %d", l.Strands, v.root, want)
	}
	v.adopt = res
	return nil
}

// pickStride spreads picked strands over the vault's directories.
const pickStride = 7919

// pick returns k strands (relative paths) that earlier picks did not
// return, spread over the vault, until the vault is used up; then it
// starts over.
func (v *benchVault) pick(k int) []string {
	n := len(v.rels)
	stride := pickStride
	for gcd(stride, n) != 1 {
		stride++
	}
	out := make([]string, k)
	for i := range out {
		out[i] = v.rels[(v.next*stride)%n]
		v.next++
	}
	return out
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func (v *benchVault) abs(rel string) string { return filepath.Join(v.root, filepath.FromSlash(rel)) }

// findTime runs the baseline of the issue, find VAULT -name '*.md'
// -printf '%s %T@\n', with its output going to /dev/null.
func findTime(ctx context.Context, root string) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, "find", root, "-name", "*.md", "-printf", `%s %T@\n`)
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("find baseline: %w", err)
	}
	return time.Since(start), nil
}

// spawnLatencies starts the instant agent n times, one after another, the
// way a minimal runner would (os/exec, prompt on standard input, output
// captured) and returns, in milliseconds, the time from just before each
// start to the agent's own start stamp: the floor under knotd's reaction.
func (e *env) spawnLatencies(ctx context.Context, n int) ([]float64, error) {
	stamps := &agentruns.Log{Path: e.path("spawn-stamps")}
	prompt := bytes.Repeat([]byte("a note line\n"), 200)
	begins := make([]time.Time, n)
	for i := range begins {
		cmd := exec.CommandContext(ctx, e.agent)
		cmd.Env = append(os.Environ(), "BENCH_STAMPS="+stamps.Path, "KNOT_STRAND=s"+strconv.Itoa(i))
		cmd.Stdin = bytes.NewReader(prompt)
		cmd.Stdout = io.Discard
		begins[i] = time.Now()
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("spawn the instant agent: %w", err)
		}
	}
	all, err := stamps.Poll()
	if err != nil {
		return nil, err
	}
	if len(all) != n {
		return nil, fmt.Errorf("spawned the instant agent %d times but it stamped %d", n, len(all))
	}
	lat := make([]float64, n)
	for i, s := range all {
		lat[i] = stats.Ms(s.At.Sub(begins[i]))
	}
	return lat, nil
}

// spawnPool runs the instant agent once per note, conc at a time, each
// with the note as its prompt, and returns the wall time: what running
// the agents alone costs, without knotd.
func (e *env) spawnPool(ctx context.Context, notes []string, conc int) (time.Duration, error) {
	jobs := make(chan string)
	errs := make(chan error, conc)
	start := time.Now()
	for range conc {
		go func() { // each worker sends exactly one value on errs
			var err error
			for abs := range jobs {
				if err != nil {
					continue
				}
				var prompt []byte
				if prompt, err = os.ReadFile(abs); err != nil {
					continue
				}
				cmd := exec.CommandContext(ctx, e.agent)
				cmd.Stdin = bytes.NewReader(prompt)
				cmd.Stdout = io.Discard
				err = cmd.Run()
			}
			errs <- err
		}()
	}
	for _, n := range notes {
		jobs <- n
	}
	close(jobs)
	var err error
	for range conc {
		err = errors.Join(err, <-errs)
	}
	if err != nil {
		return 0, fmt.Errorf("spawn pool: %w", err)
	}
	return time.Since(start), nil
}

// machine describes where the figures were measured.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d CPUs, %s/%s, %s", model, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
}
