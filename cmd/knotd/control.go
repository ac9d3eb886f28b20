package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/transcript"
	"github.com/knotd/knotd/internal/vault"
)

// The commands that steer knotd: status, run, retry, pause and resume.
// Each asks the daemon that answers the vault on this machine, through
// its control socket; when none runs, each does its job on its own
// (status reads what the state store says).

const controlUsage = `usage: knotd status [--json] [VAULT]
       knotd run NOTE...
       knotd retry [--since WHEN] [VAULT]
       knotd pause [--why TEXT] NOTE...
       knotd resume [NOTE...] [--vault VAULT]

status   whether a knotd answers the vault on this machine (pid, since when,
         device, agent), the questions agents asked that wait for your
         answer (knotd approve --help), the runs in progress and waiting,
         the notes whose last run failed, the paused notes and today's runs
         (UTC); --json for scripts
run      answer each NOTE now, changed or not, paused or not
retry    run again every note whose last run failed (--since: only those
         that failed since WHEN: a time such as 2026-11-23 or
         2026-11-23T10:00:00Z, or a duration back from now such as 2h),
         but those no retry can fix (deleted, or the note's own content
         is the failure): it says why
pause    pause each NOTE: knotd records nothing and runs nothing for it
         until it is resumed (its changes wait; none is lost)
resume   resume each NOTE, or every paused note of the vault (of the
         current folder, or --vault); changes made meanwhile run now

NOTE is a path to a note, from the current folder. They work through the
running knotd when there is one (it runs them as it runs everything), and on
their own otherwise (run and retry then run the notes and wait for them).
Each says, one line per note, what it did, or why not: a note knotd would
run nothing for (none there, not a regular .md file, a tie-off, ignored, kept
from every agent by a rule or knot_mode: off, empty) is refused. Exit status
0 when every note was done, 1 when one was refused or its run failed, 2 for
a usage error.

Flags:
`

const pauseUsage = `usage: knotd pause [--why TEXT] NOTE...

Pause each NOTE (a path to a note, from the current folder): knotd records
nothing and runs nothing for it until it is resumed. Its changes wait, and
none is lost: 'knotd resume NOTE' runs what changed meanwhile. knotd run
NOTE still runs a paused note. 'knotd status' lists the paused notes, with
--why's text. Through the running knotd when there is one, on its own
otherwise.

Flags:
`

const resumeUsage = `usage: knotd resume [NOTE...] [--vault VAULT]

Resume each NOTE (a path to a note, from the current folder), or, with no
NOTE, every paused note of the vault (the current folder's, or --vault's).
What changed while a note was paused runs now. Through the running knotd
when there is one, on its own otherwise.

Flags:
`

// runControlCommand is knotd status, run, retry, pause or resume.
func runControlCommand(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("knotd "+cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var (
		jsonOut         bool
		since, why, dir string
		cfg             string
	)
	switch cmd {
	case "status":
		fs.BoolVar(&jsonOut, "json", false, "print the status as JSON")
	case "retry":
		fs.StringVar(&since, "since", "", "only the notes that failed since `WHEN` (a time, or a duration back from now)")
	case "pause":
		fs.StringVar(&why, "why", "", "why, shown by knotd status (default: paused by knotd pause)")
	case "resume":
		fs.StringVar(&dir, "vault", "", "resume every paused note of `VAULT` (default: the current folder's)")
	}
	if cmd == "run" || cmd == "retry" {
		fs.StringVar(&cfg, "config", "", "user config `FILE`, when knotd runs the notes on its own")
	}
	usage := map[string]string{"pause": pauseUsage, "resume": resumeUsage}[cmd]
	if usage == "" {
		usage = controlUsage
	}
	pos, help, err := parseCommand(fs, cmd, usage, args, stdout)
	if help || err != nil {
		return err
	}

	var root string
	var notes []string
	switch cmd {
	case "run", "pause":
		if len(pos) == 0 {
			return usageError{"knotd " + cmd + " needs at least one NOTE"}
		}
		root, notes, err = notesOf(cmd, pos)
	case "resume":
		if len(pos) > 0 {
			if dir != "" {
				return usageError{"knotd resume takes NOTEs or --vault, not both"}
			}
			root, notes, err = notesOf(cmd, pos)
		} else {
			root, err = knownVault(dir, cmd)
		}
	default:
		var arg string
		if arg, err = vaultArg(cmd, pos); err == nil {
			root, err = knownVault(arg, cmd)
		}
	}
	if err != nil {
		return err
	}
	var from time.Time
	if since != "" {
		if from, err = parseSince(since, time.Now()); err != nil {
			return usageError{"knotd retry: --since: " + err.Error()}
		}
	}

	sock, known, err := vault.ControlSocket("", root)
	if err != nil {
		return err
	}
	var c *control.Client
	if known {
		c = &control.Client{Path: sock}
	}
	switch cmd {
	case "status":
		return showStatus(ctx, c, root, jsonOut, stdout)
	case "run":
		return steer(ctx, c, root, cfg, stdout, stderr, cmd,
			func(b control.Backend) (control.Result, error) { return b.Run(ctx, notes) },
			func(v *vault.Vault) ([]string, []control.Refusal, error) { return notes, nil, nil })
	case "retry":
		return steer(ctx, c, root, cfg, stdout, stderr, cmd,
			func(b control.Backend) (control.Result, error) { return b.Retry(ctx, from) },
			func(v *vault.Vault) ([]string, []control.Refusal, error) { return v.Control().Retryable(from) })
	case "pause":
		return steer(ctx, c, root, cfg, stdout, stderr, cmd,
			func(b control.Backend) (control.Result, error) { return b.Pause(ctx, notes, why) }, nil)
	default:
		return steer(ctx, c, root, cfg, stdout, stderr, cmd,
			func(b control.Backend) (control.Result, error) { return b.Resume(ctx, notes) }, nil)
	}
}

// steer does a command through the daemon (c, when knotd ran on the vault
// here), or on its own when no daemon runs: then ask runs on the vault
// itself, unless pass is set: then the pass answers the notes pass
// returns and waits for them.
func steer(ctx context.Context, c *control.Client, root, cfg string, stdout, stderr io.Writer, cmd string,
	ask func(control.Backend) (control.Result, error), pass func(*vault.Vault) ([]string, []control.Refusal, error)) error {
	if c != nil {
		res, err := ask(c)
		if err == nil {
			return printResult(cmd, res, true, stdout, stderr)
		}
		if errors.Is(err, control.ErrNotOurs) {
			return fmt.Errorf("knotd %s: refusing the control socket: %w", cmd, err)
		}
		if !errors.Is(err, control.ErrNoDaemon) {
			return fmt.Errorf("knotd %s: the running knotd says: %w", cmd, err)
		}
	}
	v, err := vault.Open(root, vault.Options{Logger: slog.New(slog.DiscardHandler), ConfigFile: cfg})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := v.Close(); cerr != nil {
			fmt.Fprintf(stderr, "knotd %s: %v\n", cmd, cerr)
		}
	}()
	if pass == nil {
		res, err := ask(v.Control())
		if err != nil {
			return err
		}
		return printResult(cmd, res, false, stdout, stderr)
	}
	notes, refused, err := pass(v)
	if err != nil {
		return err
	}
	for _, r := range refused {
		fmt.Fprintf(stderr, "knotd %s: %s: %s\n", cmd, r.Note, r.Why)
	}
	if len(notes) == 0 {
		if len(refused) > 0 {
			return errSilent
		}
		fmt.Fprintln(stdout, "nothing to run")
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer onHangUp(cancel)()
	sum, err := v.Once(ctx, vault.OnceOptions{Notes: notes})
	if err != nil {
		return err
	}
	if sum.Standby != "" {
		fmt.Fprintf(stderr, "knotd %s: ran nothing: this device stands by: %s (knotd --take-over answers from here)\n", cmd, sum.Standby)
		return errSilent
	}
	for _, r := range sum.Refused {
		fmt.Fprintf(stderr, "knotd %s: %s: %s\n", cmd, r.Note, r.Why)
	}
	said := map[string]bool{}
	for _, r := range sum.Runs {
		said[r.Strand] = true
		fmt.Fprintf(stdout, "%s %s: %s (run %s)\n", r.Event, r.Strand, r.Outcome, transcript.ShortID(r.RunID))
		if r.Failed() && r.Reason != "" {
			fmt.Fprintf(stderr, "knotd %s: %s: %s\n", cmd, r.Strand, firstLineOf(r.Reason))
		}
	}
	for _, r := range sum.NotRun {
		said[r.Strand] = true
		fmt.Fprintf(stderr, "knotd %s: %s: not run: %s\n", cmd, r.Strand, r.Skipped)
	}
	quiet := 0
	for _, n := range notes {
		if !said[strings.TrimPrefix(n, "./")] && !slices.ContainsFunc(sum.Refused, func(r control.Refusal) bool { return r.Note == n }) {
			quiet++
			fmt.Fprintf(stderr, "knotd %s: %s: not run: knotd found nothing to do for it\n", cmd, n)
		}
	}
	if sum.Failed > 0 || len(refused) > 0 || len(sum.Refused) > 0 || len(sum.NotRun) > 0 || quiet > 0 {
		return errSilent
	}
	return nil
}

// printResult says what a command did, one line for each note; a note
// it could not act on makes the command fail (after the others were
// done).
func printResult(cmd string, res control.Result, daemon bool, stdout, stderr io.Writer) error {
	verb := map[string]string{"run": "queued", "retry": "queued", "pause": "paused", "resume": "resumed"}[cmd]
	for _, n := range res.Done {
		if did := res.Outcome(n, verb); did != verb {
			fmt.Fprintf(stdout, "%s: %s\n", n, did)
		} else {
			fmt.Fprintf(stdout, "%s %s\n", verb, n)
		}
	}
	if len(res.Done) == 0 && len(res.Refused) == 0 {
		fmt.Fprintf(stdout, "nothing to %s\n", cmd)
	}
	if daemon && (cmd == "run" || cmd == "retry") && len(res.Done) > 0 {
		fmt.Fprintln(stdout, "(the running knotd answers them; knotd status shows them)")
	}
	for _, r := range res.Refused {
		fmt.Fprintf(stderr, "knotd %s: %s: %s\n", cmd, r.Note, r.Why)
	}
	if len(res.Refused) > 0 {
		return errSilent
	}
	return nil
}

// showStatus prints the daemon's status, or the stored one when no
// daemon runs.
func showStatus(ctx context.Context, c *control.Client, root string, jsonOut bool, stdout io.Writer) error {
	var st control.Status
	running := false
	if c != nil {
		var err error
		st, err = c.Status(ctx)
		switch {
		case err == nil:
			running = true
		case errors.Is(err, control.ErrNotOurs):
			return fmt.Errorf("knotd status: refusing the control socket: %w", err)
		case !errors.Is(err, control.ErrNoDaemon):
			return fmt.Errorf("knotd status: the running knotd says: %w", err)
		}
	}
	if !running {
		var err error
		var known bool
		if st, known, err = vault.StoredStatus("", root); err != nil {
			return err
		}
		if !known {
			st = control.Status{Vault: root, Now: time.Now().UTC(), Running: []control.Running{}, Queued: []control.Queued{}, Failures: []control.Failure{}, Paused: []control.Paused{}, Deferred: []control.Paused{}, Questions: []control.Question{}}
		}
	}
	if jsonOut {
		b, err := json.MarshalIndent(struct {
			Daemon bool `json:"daemon"`
			control.Status
		}{running, st}, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	return printStatus(st, running, stdout)
}

// printStatus prints st for people.
func printStatus(st control.Status, running bool, w io.Writer) error {
	ts := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	switch {
	case !running:
		fmt.Fprintf(w, "no knotd is running for %s on this machine\n", st.Vault)
	case st.Answering:
		fmt.Fprintf(w, "knotd answers %s\n  pid %d, since %s, on %s, agent %s\n", st.Vault, st.PID, ts(st.Since), st.Device, st.Agent)
	default:
		fmt.Fprintf(w, "knotd stands by for %s: %s\n  pid %d, since %s, on %s\n", st.Vault, st.Standby, st.PID, ts(st.Since), st.Device)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	section := func(title string, n int) bool {
		if n == 0 {
			return false
		}
		tw.Flush()
		fmt.Fprintf(w, "\n%s (%d):\n", title, n)
		return true
	}
	if section("questions waiting for your answer", len(st.Questions)) {
		for _, q := range st.Questions {
			fmt.Fprintf(tw, "  %s\t%s\t%s\tasked %s ago\n", q.ID, q.Note, q.Summary, control.Age(st.Now.Sub(q.Asked)))
		}
		tw.Flush()
		fmt.Fprintln(w, "  (knotd approve ID, or knotd deny ID --why TEXT; the note's tie-off shows each question whole)")
	}
	if section("running", len(st.Running)) {
		for _, r := range st.Running {
			fmt.Fprintf(tw, "  %s\t%s\t%s\trun %s\t%s\n", r.Note, r.Event, r.Agent, transcript.ShortID(r.RunID), r.Elapsed.Round(time.Second))
		}
	}
	if section("waiting", len(st.Queued)) {
		for _, q := range st.Queued {
			how := q.FiredBy
			if q.FollowUp {
				how += ", after its run in progress"
			}
			fmt.Fprintf(tw, "  %s\t(%s)\n", q.Note, how)
		}
	}
	if section("last run failed", len(st.Failures)) {
		for _, f := range st.Failures {
			fmt.Fprintf(tw, "  %s\t%s\trun %s\t%s\n", ts(f.Time), f.Note, transcript.ShortID(f.RunID), firstLineOf(f.Reason))
		}
		tw.Flush()
		fmt.Fprintln(w, "  (knotd retry runs them again; knotd runs show RUN says more)")
	}
	if section("paused", len(st.Paused)) {
		for _, p := range st.Paused {
			fmt.Fprintf(tw, "  %s\tsince %s\t%s\n", p.Note, ts(p.Since), p.Why)
		}
		tw.Flush()
		fmt.Fprintln(w, "  (knotd resume NOTE, or knotd resume for all)")
	}
	if section("waiting for the day's budget", len(st.Deferred)) {
		for _, p := range st.Deferred {
			fmt.Fprintf(tw, "  %s\tsince %s\t%s\n", p.Note, ts(p.Since), p.Why)
		}
		tw.Flush()
		fmt.Fprintln(w, "  (they run when the budget allows, tomorrow UTC; knotd run NOTE runs one now)")
	}
	if section("schedules", len(st.Schedules)) {
		for _, s := range st.Schedules {
			if s.Problem != "" {
				fmt.Fprintf(tw, "  %s\tcannot be used:\t%s\n", s.Note, s.Problem)
				continue
			}
			fmt.Fprintf(tw, "  %s\t%s (%s)\tnext %s\n", s.Note, s.Schedule, s.Zone, ts(s.Next))
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "\ntoday (UTC): %s (knotd runs --cost says more)\n", todayLine(st.Today))
	return nil
}

// todayLine says the day's totals d: its runs, the tokens the CLIs
// reported ("tokens not reported" when none did, never "0 tokens") and
// the cost they reported.
func todayLine(d control.Totals) string {
	if d.Runs == 0 {
		return "no runs"
	}
	s := fmt.Sprintf("%s, %d ok, %d failed", plural(d.Runs, "run"), d.OK, d.Failed)
	switch {
	case d.Metered == 0:
		s += "; tokens not reported"
	default:
		s += fmt.Sprintf("; %d tokens in, %d out (reported by the CLIs of %s)", d.InputTokens, d.OutputTokens, plural(d.Metered, "run"))
	}
	if d.Priced > 0 {
		s += fmt.Sprintf("; $%.4f reported by the CLIs of %s", d.CostUSD, plural(d.Priced, "run"))
	}
	return s
}

// plural is n and word, with an s unless n is 1: "1 run", "2 runs".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// notesOf resolves paths to notes, given from the current folder, to
// their vault and vault-relative paths; they must be in one vault, and
// that a vault already (see knownVault): the command cmd makes none.
func notesOf(cmd string, args []string) (root string, rels []string, err error) {
	for _, arg := range args {
		abs, err := filepath.Abs(arg)
		if err == nil {
			abs, err = evalParent(abs)
		}
		if err != nil {
			return "", nil, usageError{fmt.Sprintf("%s: %v", arg, unwrapPath(err))}
		}
		r, _, err := vault.FindRoot(filepath.Dir(abs))
		if err != nil {
			return "", nil, usageError{fmt.Sprintf("%s: %v", arg, unwrapPath(err))}
		}
		if err := checkVault(r, arg, cmd); err != nil {
			return "", nil, err
		}
		if root != "" && r != root {
			return "", nil, usageError{fmt.Sprintf("%s is in the vault %s, the notes before it in %s: one vault at a time", arg, r, root)}
		}
		root = r
		rel, err := filepath.Rel(root, abs)
		if err != nil || !filepath.IsLocal(rel) {
			return "", nil, usageError{fmt.Sprintf("%s is not inside the vault %s", arg, root)}
		}
		rels = append(rels, filepath.ToSlash(rel))
	}
	return root, rels, nil
}

// evalParent resolves the symbolic links of abs's folder (the note itself
// may be gone: a deleted note can still be run, or resumed).
func evalParent(abs string) (string, error) {
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.Base(abs)), nil
}

// parseSince reads --since: an RFC 3339 time, a date (midnight UTC), or a
// duration back from now.
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither a time (2026-11-23, 2026-11-23T10:00:00Z) nor a duration back from now (2h, 30m)", s)
}

// watch runs the daemon, serving the control socket (knotd status and
// the commands that steer it) while it watches. A socket that cannot be
// made is said, and the daemon runs without it.
func watch(ctx context.Context, v *vault.Vault, o options, log *slog.Logger) error {
	ln, err := control.Listen(v.ControlSocket())
	if err != nil {
		log.Warn("knotd status and the commands that steer knotd will not reach this knotd", "err", err)
		defer onHangUp(func() { _, _ = v.Reload("SIGHUP") })()
		return v.Watch(ctx, vault.WatchOptions{All: o.all, TakeOver: o.takeOver})
	}
	defer onHangUp(func() { _, _ = v.Reload("SIGHUP") })() // an error is logged; the configuration in force stays
	serveCtx, stopServing := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- control.Serve(serveCtx, ln, v.Control(), log) }()
	err = v.Watch(ctx, vault.WatchOptions{All: o.all, TakeOver: o.takeOver})
	stopServing()
	if serr := <-served; serr != nil {
		log.Error("the control socket stopped", "err", serr)
	}
	return err
}
