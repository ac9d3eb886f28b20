package vault

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/agentrun/fakeagent"
	"github.com/knotd/knotd/internal/notify"
	"github.com/knotd/knotd/internal/question"
	"github.com/stretchr/testify/require"
)

// counted is a Notifier that keeps every event the vault tells it.
type counted struct {
	mu  sync.Mutex
	evs []notify.Event
}

func (c *counted) Notify(e notify.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evs = append(c.evs, e)
}

// take returns the events told since the last take, as "kind note".
func (c *counted) take() ([]string, []notify.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var said []string
	for _, e := range c.evs {
		said = append(said, string(e.Kind)+" "+e.Note)
	}
	evs := c.evs
	c.evs = nil
	return said, evs
}

// TestNotify_FailedAndBreaker: a failed run is told (its run id makes it
// once-only), and so is the pause a breaker makes, once, when it begins;
// a paused note's later changes tell nothing, and a run that went well
// tells nothing either.
func TestNotify_FailedAndBreaker(t *testing.T) {
	e := newEnv(t)
	e.userConfig("default_agent: fake\nbreakers: {failures: 2}\nagents:\n" + e.fakeAgentYAML("fake", "", fakeagent.Fail, "the model is down") +
		e.fakeAgentYAML("ok", "", fakeagent.Echo))
	n := &counted{}
	opts := e.options()
	opts.Notifier = n
	e.onceWith(opts, OnceOptions{})
	e.write("ok.md", "---\nknot_agent: ok\n---\n# Fine\n")
	e.write("a.md", "# A\n")
	sum := e.onceWith(opts, OnceOptions{})
	said, evs := n.take()
	if !slices.Equal(said, []string{"failed a.md"}) {
		t.Fatalf("told %q after a failed and an ok run; want the failure", said)
	}
	run := sum.Runs[slices.IndexFunc(sum.Runs, func(r RunReport) bool { return r.Strand == "a.md" })]
	if evs[0].ID != "failed/"+run.RunID || !strings.Contains(evs[0].Message, "the model is down") || evs[0].Vault != e.root {
		t.Errorf("failure told as %+v; want the run %s, its reason and the vault", evs[0], run.RunID)
	}

	e.write("a.md", "# A\n\nagain\n")
	e.onceWith(opts, OnceOptions{})
	said, evs = n.take()
	if !slices.Equal(said, []string{"failed a.md", "paused a.md"}) {
		t.Fatalf("told %q after the second failure; want it and the pause", said)
	}
	if p := evs[1]; !strings.Contains(p.Message, "its last 2 runs failed") || !strings.Contains(p.Message, "knotd resume a.md") {
		t.Errorf("pause told as %+v; want why and how to resume", p)
	}

	e.write("a.md", "# A\n\nand again\n")
	e.onceWith(opts, OnceOptions{})
	if said, _ := n.take(); len(said) != 0 {
		t.Errorf("a paused note's change told %q; want nothing", said)
	}
}

// TestNotify_Budget: a change that waits for the day's budget is told,
// with the same id each time it waits on the same cap that day (the
// notifier sends an id once).
func TestNotify_Budget(t *testing.T) {
	e := newEnv(t)
	e.userConfig("default_agent: fake\nbudget: {day_runs: 1}\nagents:\n" + e.fakeAgentYAML("fake", "", fakeagent.Echo))
	n := &counted{}
	opts := e.options()
	opts.Notifier = n
	e.onceWith(opts, OnceOptions{})
	e.write("a.md", "# A\n")
	e.onceWith(opts, OnceOptions{})
	e.write("b.md", "# B\n")
	e.onceWith(opts, OnceOptions{})
	e.write("b.md", "# B\n\nmore\n")
	e.write("c.md", "# C\n")
	e.onceWith(opts, OnceOptions{})
	said, evs := n.take()
	if len(said) == 0 {
		t.Fatal("nothing told; want each change that waits for the budget")
	}
	slices.Sort(said[1:])
	if !slices.Equal(said, []string{"paused b.md", "paused b.md", "paused c.md"}) {
		t.Fatalf("told %q; want each change that waits for the budget", said)
	}
	for _, ev := range evs {
		if ev.ID != evs[0].ID || !strings.Contains(ev.Message, "the vault's budget of 1 runs a day is spent") {
			t.Errorf("told %+v; want the vault's cap, under one id for the day (%s)", ev, evs[0].ID)
		}
	}
}

// TestNotify_QuestionReachesTheURLOnce: a question that starts waiting is
// told through a real Notifier to a loopback receiver in ntfy's style,
// once: a later pass with nothing new, the question's rebuild after a
// restart, and its answer tell nothing more. Under answers_from: machine
// the message does not offer the note's knot_answer line.
func TestNotify_QuestionReachesTheURLOnce(t *testing.T) {
	for _, machineOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "anywhere", true: "machine"}[machineOnly], func(t *testing.T) {
			var (
				mu    sync.Mutex
				posts []string
			)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				mu.Lock()
				posts = append(posts, r.Header.Get("Title")+"\n"+string(body))
				mu.Unlock()
			}))
			defer srv.Close()
			got := func() []string {
				mu.Lock()
				defer mu.Unlock()
				return slices.Clone(posts)
			}
			e := newEnv(t)
			e.useAgent("", fakeagent.Echo)
			if machineOnly {
				cfg, err := os.ReadFile(filepath.Join(e.configDir, "config.yaml"))
				mustDo(t, err)
				e.userConfig("answers_from: machine\n" + string(cfg))
			}
			open := func() (*Vault, *notify.Notifier, func()) {
				n := notify.New(notify.Options{Vault: e.root, Sinks: []notify.Sink{notify.URL{URL: srv.URL}}})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- n.Run(ctx) }()
				opts := e.options()
				opts.Agent = &askingRunner{inner: &agentrun.Runner{}, root: e.root}
				opts.Notifier = n
				v, err := Open(e.root, opts)
				mustDo(t, err)
				return v, n, func() {
					mustDo(t, v.Close())
					cancel()
					if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
						t.Errorf("notifier: %v", err)
					}
				}
			}
			flush := func(n *notify.Notifier) {
				ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
				defer cancel()
				mustDo(t, n.Flush(ctx))
			}
			v, n, closeV := open()
			e.once(v, false)
			e.write("n.md", "Please write it.\nASK WRITE out.txt hello\n")
			e.once(v, false)
			flush(n)
			qs, err := v.Questions()
			mustDo(t, err)
			require.Len(t, qs, 1)
			p := got()
			require.Len(t, p, 1, "the question is told once")
			require.Contains(t, p[0], "knotd asks: ")
			require.Contains(t, p[0], "knotd approve "+qs[0].ID)
			require.Equal(t, !machineOnly, strings.Contains(p[0], "knot_answer: approve "+qs[0].ID), "the note's line is offered where the note's answers are taken: %s", p[0])

			e.once(v, false) // nothing new
			flush(n)
			closeV()
			v, n, closeV = open() // a restart: the question is the state's
			defer closeV()
			e.once(v, false)
			_, err = v.AnswerQuestion(qs[0].ID, question.Approve, "", question.FromCommand)
			mustDo(t, err)
			e.once(v, false)
			flush(n)
			require.Len(t, got(), 1, "nothing more is told")
			require.Equal(t, "hello", e.read("out.txt"))
		})
	}
}
