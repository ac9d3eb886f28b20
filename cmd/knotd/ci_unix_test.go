//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/testutil"
	"gopkg.in/yaml.v3"
)

// The CI recipe of docs/ci.md, run as written: docs/ci/github-actions.yml
// and docs/ci/gitlab-ci.yml are read, and their shell steps run by sh in a
// "CI" clone of a local bare repository, with knotd (this test binary,
// run as knotd) and the agent CLI (the Claude fake, a real subprocess) on
// PATH, as the steps that install them would put them there. A user's
// clone pushes notes, and pushes again while the CI job's agents run, so
// that the job's first push is rejected and it rebases and pushes again.
// Every agent invocation is counted: nothing runs twice, a pass after the
// vault is answered runs nothing, and the user's later edit is answered
// once, by the next job.

// ciSecret is the API key the CI's secrets hold; the fake claude refuses
// to run without it.
const ciSecret = "sk-ant-test-secret"

// ciGit returns the git binary, or skips the test loudly (testutil.Git).
func ciGit(t *testing.T) string {
	t.Helper()
	p := testutil.Git(t, "the CI recipe tests")
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skipf("SKIPPED: no sh (%v): the CI recipe tests did not run", err)
	}
	return p
}

// gitEnv is the environment of every git of these tests: no user or
// system configuration.
func gitEnv(home string) []string {
	return []string{"HOME=" + home, "GIT_CONFIG_GLOBAL=" + os.DevNull, "GIT_CONFIG_NOSYSTEM=1"}
}

// gitIn runs git in dir as the user and returns its output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(ciGit(t), append([]string{"-c", "user.name=user", "-c", "user.email=user@knotd.invalid",
		"-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", "-c", "core.autocrlf=false", "-c", "pull.rebase=true"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), gitEnv(t.TempDir())...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// ciJob is a recipe read from its YAML file: the shell steps the test
// runs, each with its environment.
type ciJob struct {
	steps []ciStep
	// stateDir is the knotd state directory the recipe sets (its
	// XDG_STATE_HOME), which a "cached" variant keeps between jobs.
	stateDir string
}

type ciStep struct {
	name   string
	script string
	env    []string
}

// ciPlace is where a job runs: its workspace (the vault's checkout) and
// the runner's temporary folder.
type ciPlace struct {
	workspace, temp string
}

// githubExpr is a ${{ ... }} expression of a GitHub workflow.
var githubExpr = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// readGitHub reads the workflow's steps: the checkout and setup-go
// actions are what the test does itself, the two installs are replaced by
// its programs, and every other step must be a run: step, which is run.
func readGitHub(t *testing.T, file string, at ciPlace, branch string) ciJob {
	t.Helper()
	var wf struct {
		Env         map[string]string `yaml:"env"`
		Concurrency struct {
			Group            string `yaml:"group"`
			CancelInProgress bool   `yaml:"cancel-in-progress"`
		} `yaml:"concurrency"`
		Jobs map[string]struct {
			Env   map[string]string `yaml:"env"`
			Steps []struct {
				Name string            `yaml:"name"`
				Uses string            `yaml:"uses"`
				Run  string            `yaml:"run"`
				Env  map[string]string `yaml:"env"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(wf.Jobs) != 1 {
		t.Fatalf("%s: want one job, found %d", file, len(wf.Jobs))
	}
	// One job at a time, none cancelled midway: what the test cannot
	// play, it checks is there.
	if !strings.Contains(wf.Concurrency.Group, "github.ref") || wf.Concurrency.CancelInProgress {
		t.Fatalf("%s: want a concurrency group per branch that cancels nothing in progress, found %+v", file, wf.Concurrency)
	}
	values := map[string]string{
		"secrets.ANTHROPIC_API_KEY": ciSecret,
		"github.ref_name":           branch,
		"runner.temp":               at.temp,
	}
	expand := func(s string) string {
		return githubExpr.ReplaceAllStringFunc(s, func(e string) string {
			v, ok := values[githubExpr.FindStringSubmatch(e)[1]]
			if !ok {
				t.Fatalf("%s: the test does not know the value of %s", file, e)
			}
			return v
		})
	}
	var job ciJob
	for _, j := range wf.Jobs {
		for _, s := range j.Steps {
			switch {
			case strings.HasPrefix(s.Uses, "actions/checkout@"), strings.HasPrefix(s.Uses, "actions/setup-go@"):
				continue // the test checks out the vault; Go is what runs it
			case s.Uses != "":
				t.Fatalf("%s: step uses %s, which the test cannot play", file, s.Uses)
			case s.Name == "Install knotd" || s.Name == "Install the agent CLI":
				continue // the test puts its knotd and agent on PATH
			case s.Run == "":
				t.Fatalf("%s: step %q runs nothing", file, s.Name)
			}
			var env []string
			for _, layer := range []map[string]string{wf.Env, j.Env, s.Env} {
				for k, v := range layer {
					v = expand(v)
					env = append(env, k+"="+v)
					if k == "XDG_STATE_HOME" {
						job.stateDir = v
					}
				}
			}
			job.steps = append(job.steps, ciStep{name: s.Name, script: s.Run, env: env})
		}
	}
	return job
}

// readGitLab reads the job's script: (before_script: installs knotd and
// the agent, which the test puts on PATH itself). Its variables are
// expanded as GitLab does, from the predefined ones the test sets; the
// push URL, which names the GitLab server, is the local bare repository.
func readGitLab(t *testing.T, file string, at ciPlace, branch, origin string) ciJob {
	t.Helper()
	var jobs map[string]struct {
		ResourceGroup string            `yaml:"resource_group"`
		Variables     map[string]string `yaml:"variables"`
		Script        []string          `yaml:"script"`
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &jobs); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(jobs) != 1 {
		t.Fatalf("%s: want one job, found %d", file, len(jobs))
	}
	vars := map[string]string{
		"CI_COMMIT_BRANCH": branch,
		"CI_PROJECT_DIR":   at.workspace,
		"CI_SERVER_HOST":   "gitlab.invalid",
		"CI_PROJECT_PATH":  "team/notes",
		"KNOTD_PUSH_TOKEN": "glpat-test",
		// A masked CI/CD variable of the project.
		"ANTHROPIC_API_KEY": ciSecret,
	}
	var job ciJob
	for _, j := range jobs {
		if j.ResourceGroup == "" {
			t.Fatalf("%s: the job has no resource_group: two jobs would answer the same notes", file)
		}
		names := make([]string, 0, len(j.Variables))
		for k := range j.Variables {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			vars[k] = os.Expand(j.Variables[k], func(name string) string {
				v, ok := vars[name]
				if !ok {
					if _, later := j.Variables[name]; later {
						t.Fatalf("%s: %s uses %s, defined later (the test expands in name order)", file, k, name)
					}
					t.Fatalf("%s: the test does not know the value of $%s", file, name)
				}
				return v
			})
		}
		if _, ok := vars["PUSH_URL"]; !ok {
			t.Fatalf("%s: no PUSH_URL", file)
		}
		vars["PUSH_URL"] = origin
		job.stateDir = vars["XDG_STATE_HOME"]
		var env []string
		for k, v := range vars {
			env = append(env, k+"="+v)
		}
		job.steps = append(job.steps, ciStep{name: "script", script: strings.Join(j.Script, "\n"), env: env})
	}
	return job
}

// ciRig is one CI setup: the bare repository, the user's clone, the
// programs on PATH, the fake agent's state and where jobs run.
type ciRig struct {
	t                  *testing.T
	base, origin, user string
	bin, fake, gate    string
	at                 ciPlace
	calls              int               // agent invocations counted so far
	prompts            map[string]string // the last prompt of each note
}

func newCIRig(t *testing.T) *ciRig {
	t.Helper()
	ciGit(t)
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &ciRig{t: t, base: base, origin: filepath.Join(base, "origin.git"), user: filepath.Join(base, "user"),
		bin: filepath.Join(base, "bin"), fake: filepath.Join(base, "fake"), gate: filepath.Join(base, "gate"),
		at:      ciPlace{workspace: filepath.Join(base, "builds", "notes"), temp: filepath.Join(base, "runner-temp")},
		prompts: map[string]string{}}
	for _, d := range []string{r.bin, r.fake} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gitIn(t, base, "init", "-q", "--bare", r.origin)
	gitIn(t, base, "clone", "-q", r.origin, r.user)
	// knotd is this test binary run as knotd; the agent CLI is the Claude
	// fake, which says so and fails when the key from the CI's secrets is
	// not in its environment.
	exe := fakeagent.Program(t)
	writeExec(t, filepath.Join(r.bin, "knotd"), fmt.Sprintf("#!/bin/sh\n%s=1 exec '%s' \"$@\"\n", asKnotd, exe))
	writeExec(t, filepath.Join(r.bin, "claude"), fmt.Sprintf(
		"#!/bin/sh\nif [ \"$ANTHROPIC_API_KEY\" != '%s' ]; then echo 'fake claude: ANTHROPIC_API_KEY is not the secret' >&2; exit 97; fi\n%s=%s exec '%s' \"$@\"\n",
		ciSecret, fakeagent.EnvBehaviour, fakeagent.Claude, exe))
	return r
}

func writeExec(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

// userWrites writes files into the user's clone, commits and pushes them.
func (r *ciRig) userWrites(msg string, files map[string]string) {
	r.t.Helper()
	for rel, content := range files {
		writeFile(r.t, filepath.Join(r.user, rel), content)
	}
	gitIn(r.t, r.user, "add", "-A")
	gitIn(r.t, r.user, "commit", "-q", "-m", msg)
	gitIn(r.t, r.user, "push", "-q", "origin", "HEAD:main")
}

// ciMode is how jobs meet what the previous job left.
type ciMode int

const (
	freshJobs   ciMode = iota // a new runner each job: fresh checkout, fresh state (hosted runners)
	cachedState               // a fresh checkout, the state directory restored from a cache
	keptRunner                // the checkout and the state stay between jobs (a self-hosted runner, its state folder one that outlives the job)
)

// checkout prepares the place of a new job as the CI would: what a new
// runner would not have is removed, and the vault is checked out at the
// branch's tip, detached, shallow.
func (r *ciRig) checkout(mode ciMode, stateDir string) {
	r.t.Helper()
	if mode == keptRunner {
		if _, err := os.Stat(r.at.workspace); err == nil {
			gitIn(r.t, r.at.workspace, "fetch", "-q", "origin", "main")
			gitIn(r.t, r.at.workspace, "checkout", "-q", "--detach", "FETCH_HEAD")
			gitIn(r.t, r.at.workspace, "clean", "-q", "-ffdx")
			return
		}
	}
	kept := filepath.Join(r.base, "cache")
	if mode == cachedState && stateDir != "" {
		if _, err := os.Stat(stateDir); err == nil {
			mustRename(r.t, stateDir, kept)
		}
	}
	for _, d := range []string{filepath.Dir(r.at.workspace), r.at.temp} {
		if err := os.RemoveAll(d); err != nil {
			r.t.Fatal(err)
		}
	}
	// A new runner's agent CLI has no conversations either.
	if err := os.RemoveAll(filepath.Join(r.fake, fakeagent.Claude)); err != nil {
		r.t.Fatal(err)
	}
	if err := os.MkdirAll(r.at.temp, 0o755); err != nil {
		r.t.Fatal(err)
	}
	gitIn(r.t, r.base, "clone", "-q", "--depth", "1", "file://"+r.origin, r.at.workspace)
	gitIn(r.t, r.at.workspace, "checkout", "-q", "--detach")
	if _, err := os.Stat(kept); err == nil {
		if err := os.MkdirAll(filepath.Dir(stateDir), 0o755); err != nil {
			r.t.Fatal(err)
		}
		mustRename(r.t, kept, stateDir)
	}
}

func mustRename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// job runs one CI job of the recipe read by read, which must succeed,
// and returns the notes its agent invocations answered ("Event note",
// sorted). During, if set, runs while the job's agents wait, and the
// agents go on after it.
func (r *ciRig) job(mode ciMode, read func(ciPlace) ciJob, during func()) []string {
	r.t.Helper()
	calls, out, err := r.tryJob(mode, read, during)
	if err != nil {
		r.t.Fatalf("the job failed: %v\n%s", err, out)
	}
	return calls
}

// tryJob is job, returning the job's output and its first failure.
func (r *ciRig) tryJob(mode ciMode, read func(ciPlace) ciJob, during func()) (calls []string, output string, err error) {
	r.t.Helper()
	j := read(r.at)
	r.checkout(mode, j.stateDir)
	base := append(os.Environ(), gitEnv(filepath.Join(r.base, "home"))...)
	base = append(base, "PATH="+r.bin+string(os.PathListSeparator)+os.Getenv("PATH"), fakeagent.EnvState+"="+r.fake,
		"RUNNER_TEMP="+r.at.temp, "GITHUB_WORKSPACE="+r.at.workspace)
	if during != nil {
		base = append(base, fakeagent.EnvGate+"="+r.gate)
		if err := os.Remove(r.gate); err != nil && !os.IsNotExist(err) {
			r.t.Fatal(err)
		}
	}
	var out strings.Builder
	defer func() {
		r.t.Logf("job output:\n%s", out.String())
		calls, output = r.newCalls(), out.String()
	}()
	for i, s := range j.steps {
		cmd := exec.Command("sh", "-e", "-c", s.script)
		cmd.Dir = r.at.workspace
		cmd.Env = append(slices.Clone(base), s.env...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			r.t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if during != nil && i == len(j.steps)-1 {
			if started, why := r.waitForCall(done); !started {
				writeFile(r.t, r.gate, "open\n") // so that no agent waits on
				return nil, "", fmt.Errorf("step %q: %s (%v)", s.name, why, <-done)
			}
			during()
			writeFile(r.t, r.gate, "open\n")
		}
		if err := <-done; err != nil {
			return nil, "", fmt.Errorf("step %q: %w", s.name, err)
		}
	}
	return nil, "", nil
}

// waitForCall waits until an agent of the job has started; if the step
// ends first, or the wait times out, it says why not (done is left for
// the caller to read).
func (r *ciRig) waitForCall(done chan error) (bool, string) {
	r.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		calls, err := fakeagent.Calls(r.fake)
		if err == nil && len(calls) > r.calls {
			return true, ""
		}
		select {
		case err := <-done:
			done <- err
			return false, "it ended before any agent started"
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return false, fmt.Sprintf("no agent started within %v", waitTimeout)
		}
	}
}

var eventLine = regexp.MustCompile(`(?m)^Event: (\w+)\nStrand: (.+)$`)

// newCalls returns the agent invocations since the last call, as "Event
// note", sorted.
func (r *ciRig) newCalls() []string {
	r.t.Helper()
	calls, err := fakeagent.Calls(r.fake)
	if err != nil && !os.IsNotExist(err) {
		r.t.Fatal(err)
	}
	var got []string
	for _, c := range calls[r.calls:] {
		m := eventLine.FindStringSubmatch(c.Stdin)
		if m == nil {
			r.t.Fatalf("an agent call without an Event Context: %q", c.Stdin)
		}
		got = append(got, m[1]+" "+m[2])
		r.prompts[m[2]] = c.Stdin
	}
	r.calls = len(calls)
	slices.Sort(got)
	return got
}

// sections returns the section headers of a tie-off in the user's clone.
func (r *ciRig) sections(rel string) []string {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.user, rel))
	if err != nil {
		r.t.Fatal(err)
	}
	return regexp.MustCompile(`(?m)^## Event: .*$`).FindAllString(string(b), -1)
}

func TestCIRecipe(t *testing.T) {
	recipes := []struct {
		name string
		read func(r *ciRig) func(ciPlace) ciJob
	}{
		{"github", func(r *ciRig) func(ciPlace) ciJob {
			return func(at ciPlace) ciJob {
				return readGitHub(r.t, filepath.Join("..", "..", "docs", "ci", "github-actions.yml"), at, "main")
			}
		}},
		{"gitlab", func(r *ciRig) func(ciPlace) ciJob {
			return func(at ciPlace) ciJob {
				return readGitLab(r.t, filepath.Join("..", "..", "docs", "ci", "gitlab-ci.yml"), at, "main", r.origin)
			}
		}},
	}
	modes := []struct {
		name string
		mode ciMode
	}{{"fresh runner", freshJobs}, {"cached state", cachedState}, {"kept runner", keptRunner}}
	for _, rc := range recipes {
		for _, m := range modes {
			t.Run(rc.name+"/"+m.name, func(t *testing.T) {
				if testing.Short() && m.mode != freshJobs {
					t.Skip("-short: the fresh runner only")
				}
				t.Parallel()
				r := newCIRig(t)
				read := rc.read(r)
				// A vault without notes yet: nothing to answer, nothing
				// pushed.
				r.userWrites("vault", map[string]string{".knot/config.yaml": "# the vault's shared config\n"})
				head := gitIn(t, r.base, "--git-dir", r.origin, "rev-parse", "main")
				if got := r.job(m.mode, read, nil); len(got) != 0 {
					t.Errorf("a job on a vault without notes ran %v", got)
				}
				if after := gitIn(t, r.base, "--git-dir", r.origin, "rev-parse", "main"); after != head {
					t.Errorf("a job that answered nothing pushed %s", after)
				}
				r.userWrites("notes", map[string]string{
					"a.md":       "# A\n\nWhat next?\n",
					"ideas/b.md": "# B\n",
				})

				// The user pushes a new note while the job's agents run:
				// the job's push is rejected, and it rebases and pushes.
				got := r.job(m.mode, read, func() {
					r.userWrites("c", map[string]string{"c.md": "# C\n"})
				})
				if want := []string{"Created a.md", "Created ideas/b.md"}; !slices.Equal(got, want) {
					t.Fatalf("the first job ran %v; want %v", got, want)
				}
				gitIn(t, r.user, "pull", "-q", "origin", "main")
				if subjects := strings.Split(strings.TrimSpace(gitIn(t, r.user, "log", "--format=%s", "-3")), "\n"); !slices.Equal(subjects,
					[]string{"knotd: answer notes [skip ci]", "c", "notes"}) {
					t.Errorf("history after the first job = %v; want the job's commit rebased onto the user's", subjects)
				}
				if files := strings.Fields(gitIn(t, r.user, "show", "--name-only", "--format=", "HEAD")); !slices.Equal(files,
					[]string{"a.tieoff.md", "ideas/b.tieoff.md"}) {
					t.Errorf("the job committed %v; want only the two tie-offs", files)
				}

				// The next job answers the note pushed meanwhile, once; the
				// one after answers nothing and pushes nothing.
				if got := r.job(m.mode, read, nil); !slices.Equal(got, []string{"Created c.md"}) {
					t.Errorf("the second job ran %v; want only c.md", got)
				}
				head = gitIn(t, r.base, "--git-dir", r.origin, "rev-parse", "main")
				if got := r.job(m.mode, read, nil); len(got) != 0 {
					t.Errorf("the third job ran %v; want nothing", got)
				}
				if after := gitIn(t, r.base, "--git-dir", r.origin, "rev-parse", "main"); after != head {
					t.Errorf("a job that answered nothing pushed %s", after)
				}

				// The user pulls, edits a note, pushes: the next job
				// answers the edit once, the one after nothing.
				gitIn(t, r.user, "pull", "-q", "origin", "main")
				r.userWrites("edit a", map[string]string{"a.md": "# A\n\nWhat next? Tomorrow.\n"})
				if got := r.job(m.mode, read, nil); !slices.Equal(got, []string{"Modified a.md"}) {
					t.Errorf("the job after the edit ran %v; want only a.md", got)
				}
				// The agent gets the note as it is now and, on a new
				// runner, where its conversation is gone with the runner
				// that had it, its earlier answer from the tie-off.
				for _, s := range []string{"What next? Tomorrow.", "FAKE REPLY (user messages seen: 1)"} {
					if m.mode != keptRunner && !strings.Contains(r.prompts["a.md"], s) {
						t.Errorf("the edit's prompt lacks %q:\n%s", s, r.prompts["a.md"])
					}
				}
				if got := r.job(m.mode, read, nil); len(got) != 0 {
					t.Errorf("the job after that ran %v; want nothing", got)
				}
				gitIn(t, r.user, "pull", "-q", "origin", "main")
				for rel, want := range map[string]int{"a.tieoff.md": 2, "ideas/b.tieoff.md": 1, "c.tieoff.md": 1} {
					if got := r.sections(rel); len(got) != want {
						t.Errorf("%s has %d sections %v; want %d", rel, len(got), got, want)
					}
				}
				if st := gitIn(t, r.user, "status", "--porcelain"); st != "" {
					t.Errorf("the user's clone is not clean after pulling: %s", st)
				}

				// A deleted note gets its Deleted run only where the job
				// keeps its state with its checkout (docs/ci.md).
				gitIn(t, r.user, "rm", "-q", "ideas/b.md")
				gitIn(t, r.user, "commit", "-q", "-m", "drop b")
				gitIn(t, r.user, "push", "-q", "origin", "HEAD:main")
				var want []string
				if m.mode == keptRunner {
					want = []string{"Deleted ideas/b.md"}
				}
				if got := r.job(m.mode, read, nil); !slices.Equal(got, want) {
					t.Errorf("the job after a deletion ran %v; want %v", got, want)
				}
				if got := r.job(m.mode, read, nil); len(got) != 0 {
					t.Errorf("the job after that ran %v; want nothing", got)
				}

				// A note renamed with its tie-off runs nothing. Renamed
				// alone, it runs once as a new note on a fresh checkout,
				// which knows a note by its tie-off; a kept runner moves
				// its tie-off with it, as a desk does (docs/ci.md).
				gitIn(t, r.user, "pull", "-q", "origin", "main")
				gitIn(t, r.user, "mv", "c.md", "ideas/c2.md")
				gitIn(t, r.user, "mv", "c.tieoff.md", "ideas/c2.tieoff.md")
				gitIn(t, r.user, "commit", "-q", "-m", "move c with its tie-off")
				gitIn(t, r.user, "push", "-q", "origin", "HEAD:main")
				if got := r.job(m.mode, read, nil); len(got) != 0 {
					t.Errorf("the job after a note moved with its tie-off ran %v; want nothing", got)
				}
				gitIn(t, r.user, "mv", "a.md", "a2.md")
				gitIn(t, r.user, "commit", "-q", "-m", "move a alone")
				gitIn(t, r.user, "push", "-q", "origin", "HEAD:main")
				want, tieOff := []string{"Created a2.md"}, "a.tieoff.md"
				if m.mode == keptRunner {
					want, tieOff = nil, "a2.tieoff.md"
				}
				if got := r.job(m.mode, read, nil); !slices.Equal(got, want) {
					t.Errorf("the job after a note moved alone ran %v; want %v", got, want)
				}
				gitIn(t, r.user, "pull", "-q", "origin", "main")
				if got := r.sections(tieOff); len(got) != 2 {
					t.Errorf("%s has %d sections %v; want a.md's 2", tieOff, len(got), got)
				}
			})
		}
	}
}

// TestCIRecipe_PushFails: a push that stays rejected is tried 5 times,
// then the job fails, saying so; a rebase that conflicts (the user
// changed the same tie-off meanwhile) is aborted and the job fails,
// saying so, pushing nothing. The next job answers what the failed one
// did not push.
func TestCIRecipe_PushFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup breaks the push; during runs while the job's agents wait.
		setup, during func(r *ciRig)
		says          string
		pushes        int // tries the hook counts; 0: no hook
	}{
		{name: "rejected every time", says: "knotd: push rejected 5 times; giving up", pushes: 5,
			setup: func(r *ciRig) {
				writeExec(r.t, filepath.Join(r.origin, "hooks", "pre-receive"),
					"#!/bin/sh\necho try >> '"+filepath.Join(r.base, "pushes")+"'\necho 'no pushes today' >&2\nexit 1\n")
			}},
		{name: "tie-off conflict", says: "knotd: the tie-offs conflict with main; not pushed",
			during: func(r *ciRig) {
				r.userWrites("my own tie-off", map[string]string{"a.tieoff.md": "# my notes on a\n"})
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newCIRig(t)
			read := func(at ciPlace) ciJob {
				return readGitHub(t, filepath.Join("..", "..", "docs", "ci", "github-actions.yml"), at, "main")
			}
			r.userWrites("notes", map[string]string{".knot/config.yaml": "# the vault's shared config\n", "a.md": "# A\n"})
			head := gitIn(t, r.base, "--git-dir", r.origin, "rev-parse", "main")
			if tc.setup != nil {
				tc.setup(r)
			}
			var during func()
			if tc.during != nil {
				during = func() {
					tc.during(r)
					head = gitIn(t, r.base, "--git-dir", r.origin, "rev-parse", "main")
				}
			}
			calls, out, err := r.tryJob(freshJobs, read, during)
			if err == nil || !strings.Contains(out, tc.says) {
				t.Fatalf("the job ended with %v, saying:\n%s\nwant a failure saying %q", err, out, tc.says)
			}
			if !slices.Equal(calls, []string{"Created a.md"}) {
				t.Errorf("the job ran %v; want a.md once", calls)
			}
			if after := gitIn(t, r.base, "--git-dir", r.origin, "rev-parse", "main"); after != head {
				t.Errorf("the failed job pushed: main is %s, was %s", after, head)
			}
			if tc.pushes > 0 {
				b, err := os.ReadFile(filepath.Join(r.base, "pushes"))
				if err != nil {
					t.Fatal(err)
				}
				if n := strings.Count(string(b), "try"); n != tc.pushes {
					t.Errorf("the job tried %d pushes; want %d", n, tc.pushes)
				}
				if err := os.Remove(filepath.Join(r.origin, "hooks", "pre-receive")); err != nil {
					t.Fatal(err)
				}
			}
			// What was not pushed is answered by the next job: a.md once
			// more (its answer never reached the vault), then nothing.
			if got := r.job(freshJobs, read, nil); !slices.Equal(got, []string{"Created a.md"}) {
				t.Errorf("the next job ran %v; want a.md once", got)
			}
			if got := r.job(freshJobs, read, nil); len(got) != 0 {
				t.Errorf("the job after that ran %v; want nothing", got)
			}
		})
	}
}
