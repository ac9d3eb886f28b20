package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/knotd/knotd/internal/transcript"
	"github.com/knotd/knotd/internal/vault"
)

const runsUsage = `usage: knotd runs [--note PATH] [--since WHEN] [--limit N] [-f] [--json] [VAULT]
       knotd runs --cost [--note PATH] [--since WHEN] [--json] [VAULT]
       knotd runs show RUN_ID [--json] [VAULT]
       knotd runs --keep DAYS [--keep-count N] [VAULT]

Every agent run leaves a transcript, RUN_ID.jsonl, in the vault's folder of
knotd's state directory on the machine that ran it (not in the vault: see
docs/files.md): the command line (secrets
masked), the prompt as sent, the agent's output as content blocks, how the
run ended, and where its section went in the tie-off.

'knotd runs' lists the runs, newest first: time (UTC), run, outcome,
duration, event, agent and note; --note PATH lists one note's (a
relative PATH is read from the current folder, or else from the vault's
root); --limit N lists the newest N. With -f
(--follow) it lists the newest runs (10 unless --limit says otherwise),
oldest first, then keeps printing a line for every run that starts or ends
until interrupted (Ctrl-C). The list names each run by its short id: the
last 8 characters of its run id (its random part: runs of the same minutes
share the first ones), more if two runs share them. 'knotd runs show RUN_ID'
prints one run; RUN_ID is the short id, the id in the run's tie-off marker
(<!-- knot:run RUN_ID ... -->), or any end or beginning of the id that names
one run only. --json prints the
list as JSON (with -f: one JSON object a line), or a run's raw transcript
lines. --since WHEN lists only the runs started since WHEN (2026-11-23,
2026-11-23T10:00:00Z, or a duration back from now: 24h).

'knotd runs --cost' totals the runs' tokens and cost, as the agents' CLIs
reported them, per day (UTC), agent, folder and note, then in all. A CLI
that reports no cost (Gemini, Codex, llm, ollama, the digest) shows its
tokens only: knotd never makes up a price. Runs still in progress are not
counted.

Transcripts are kept until you prune them: --keep DAYS deletes those older
than DAYS days, --keep-count N all but the newest N (with both, a transcript
goes when either says so). A run still being written is never deleted.

Flags:
`

// runsOptions are the flags of knotd runs.
type runsOptions struct {
	strand            string
	jsonOut, follow   bool
	cost              bool
	since             string
	keepDays, keepNum int
	limit             int
	args              []string // positional: [show RUN_ID] [VAULT]
}

// runRuns is knotd runs: list, show or prune run transcripts. It reads the
// transcripts in the vault's folder of the state directory only, so it
// works while knotd is running.
func runRuns(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o runsOptions
	fs := flag.NewFlagSet("knotd runs", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.strand, "note", "", "list only the runs of the note at `PATH`")
	fs.StringVar(&o.strand, "strand", "", "the same as --note (its older name)")
	fs.BoolVar(&o.jsonOut, "json", false, "print JSON: the list, or the run's raw transcript lines")
	fs.IntVar(&o.keepDays, "keep", 0, "delete transcripts older than `DAYS` days")
	fs.IntVar(&o.keepNum, "keep-count", 0, "delete all transcripts but the newest `N`")
	fs.IntVar(&o.limit, "limit", 0, "list only the newest `N` runs")
	fs.BoolVar(&o.cost, "cost", false, "total tokens and cost per day, agent, folder and note")
	fs.StringVar(&o.since, "since", "", "only the runs started since `WHEN` (a time, or a duration back from now)")
	fs.BoolVar(&o.follow, "f", false, "follow: after the list, print runs as they start and end, until interrupted")
	fs.BoolVar(&o.follow, "follow", false, "the same as -f")
	fs.Usage = func() {}
	args, help, err := parseCommand(fs, "runs", runsUsage, args, stdout)
	if help || err != nil {
		return err
	}
	o.args = args
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if (set["keep"] && o.keepDays < 1) || (set["keep-count"] && o.keepNum < 1) {
		return usageError{"knotd runs: --keep and --keep-count must be at least 1"}
	}
	if set["limit"] && o.limit < 1 {
		return usageError{"knotd runs: --limit must be at least 1"}
	}
	prune := set["keep"] || set["keep-count"]
	show := len(o.args) > 0 && o.args[0] == "show"
	switch {
	case show && (prune || o.strand != "" || o.follow || set["limit"]):
		return usageError{"knotd runs show takes only RUN_ID, --json and VAULT"}
	case prune && (o.jsonOut || o.strand != "" || o.follow || set["limit"] || o.cost || o.since != ""):
		return usageError{"knotd runs --keep/--keep-count take no --json, --note, --since, --limit, --cost or -f"}
	case show && (o.cost || o.since != ""):
		return usageError{"knotd runs show takes only RUN_ID, --json and VAULT"}
	case o.cost && (o.follow || set["limit"]):
		return usageError{"knotd runs --cost totals every run (--since and --note choose which): it takes no --limit or -f"}
	case show && len(o.args) < 2:
		return usageError{"knotd runs show needs a RUN_ID (from 'knotd runs' or a tie-off's <!-- knot:run RUN_ID --> marker)"}
	}
	pos := o.args
	if show {
		pos = o.args[2:]
	}
	arg, err := vaultArg("runs", pos)
	if err != nil {
		return err
	}
	root, err := vaultRoot(arg, nil)
	if err != nil {
		return err
	}
	if o.follow {
		return followRuns(ctx, root, o, stdout)
	}
	dir, found, err := vault.RunsDir("", root)
	if err != nil {
		return err
	}
	if !found {
		// knotd never ran on this vault on this machine: there is no
		// transcript to list, show or prune.
		switch {
		case show && transcript.CheckRunID(o.args[1]) != nil && !isRunIDPrefix(o.args[1]):
			return badRunID(o.args[1])
		case show:
			return fmt.Errorf("no run %s: knotd has not run on the vault %s on this machine (transcripts stay on the machine that ran them)", o.args[1], root)
		case prune:
			fmt.Fprintln(stdout, "deleted 0 run transcripts: knotd has not run on this vault on this machine")
		case o.jsonOut:
			fmt.Fprintln(stdout, "[]")
		default:
			fmt.Fprintln(stdout, "no runs")
		}
		return nil
	}
	switch {
	case show:
		return showRun(dir, o.args[1], o.jsonOut, stdout, stderr)
	case prune:
		return pruneRuns(dir, o, stdout)
	case o.cost:
		return costOfRuns(root, dir, o, stdout)
	}
	return listRuns(root, dir, o, stdout)
}

// runJSON is one run in the JSON list of knotd runs --json.
type runJSON struct {
	RunID    string        `json:"run_id"`
	ShortID  string        `json:"short_id"`
	Time     time.Time     `json:"time"`
	Strand   string        `json:"strand"`
	Event    string        `json:"event"`
	Agent    string        `json:"agent,omitempty"`
	Finished bool          `json:"finished"`
	Outcome  string        `json:"outcome,omitempty"`
	Duration time.Duration `json:"duration_ns,omitempty"`
	Torn     bool          `json:"torn,omitempty"`
	Problem  string        `json:"problem,omitempty"`
	Path     string        `json:"path"`
}

// listedRuns returns the runs in dir that o asks for (--strand, --limit),
// newest first.
func listedRuns(root, dir string, o runsOptions) ([]transcript.Summary, error) {
	var since time.Time
	if o.since != "" {
		var err error
		if since, err = parseSince(o.since, time.Now()); err != nil {
			return nil, usageError{"knotd runs: --since: " + err.Error()}
		}
	}
	runs, err := transcript.ListSince(dir, since)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	if o.strand != "" {
		rel, err := strandArg(root, o.strand)
		if err != nil {
			return nil, err
		}
		kept := runs[:0]
		for _, r := range runs {
			if r.Strand == rel {
				kept = append(kept, r)
			}
		}
		runs = kept
	}
	if o.limit > 0 && len(runs) > o.limit {
		runs = runs[:o.limit]
	}
	return runs, nil
}

func toJSON(r transcript.Summary, short map[string]string) runJSON {
	return runJSON{RunID: r.RunID, ShortID: short[r.RunID], Time: r.Time.UTC(), Strand: r.Strand, Event: r.Event.String(), Agent: r.Agent,
		Finished: r.Finished, Outcome: r.Outcome, Duration: r.Duration, Torn: r.Torn, Problem: r.Problem, Path: r.Path}
}

// timeLayout is how knotd prints a time for people: in UTC, always.
const timeLayout = "2006-01-02 15:04:05Z"

// runColumns are a run's columns in the list, after its time and id.
func runColumns(r transcript.Summary) (outcome, dur string) {
	outcome, dur = r.Outcome, roundDuration(r.Duration).String()
	switch {
	case r.Problem != "":
		outcome, dur = "unreadable", "-"
	case r.Torn:
		outcome, dur = "torn", "-"
	case !r.Finished:
		outcome, dur = "unfinished", "-"
	}
	return outcome, dur
}

// shortIDs returns the short ids of the runs in dir: each names its run
// only, for knotd runs show.
func shortIDs(dir string) (map[string]string, error) {
	ids, err := runIDs(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return transcript.ShortIDs(ids), nil
}

func listRuns(root, dir string, o runsOptions, w io.Writer) error {
	runs, err := listedRuns(root, dir, o)
	if err != nil {
		return err
	}
	short, err := shortIDs(dir)
	if err != nil {
		return err
	}
	if o.jsonOut {
		list := make([]runJSON, 0, len(runs))
		for _, r := range runs {
			list = append(list, toJSON(r, short))
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(list); err != nil {
			return fmt.Errorf("write runs: %w", err)
		}
		return nil
	}
	if len(runs) == 0 {
		fmt.Fprintln(w, "no runs")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tRUN\tOUTCOME\tDURATION\tEVENT\tAGENT\tNOTE")
	for _, r := range runs {
		outcome, dur := runColumns(r)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.UTC().Format(timeLayout), orDash(short[r.RunID]), outcome, dur,
			r.Event, orDash(r.Agent), orDash(r.Strand))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write runs: %w", err)
	}
	return nil
}

// strandArg turns --note's PATH into the vault-relative, slash-separated
// path runs record: a relative PATH is read from the current folder, as
// every command reads a note's path, when that leads inside the vault, or
// else from the vault's root (when both lead inside, the one that exists
// wins); an absolute one must be inside the vault.
func strandArg(root, path string) (string, error) {
	return pathInVault(root, "--note", path)
}

// isRunIDPrefix reports whether s may begin a run id: lower-case
// hexadecimal digits and dashes, at most a run id long.
func isRunIDPrefix(s string) bool {
	if s == "" || len(s) > 36 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r == '-') {
			return false
		}
	}
	return true
}

// runIDs returns the ids of the runs whose transcripts are in dir.
func runIDs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), transcript.Ext)
		if ok && transcript.CheckRunID(id) == nil {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// resolveRunID returns the run id in dir that arg names: a whole run id,
// or the end of one run id only (its short id, as knotd runs and status
// show it), or the beginning of one run id only.
func resolveRunID(dir, arg string) (string, error) {
	if transcript.CheckRunID(arg) == nil {
		return arg, nil
	}
	if !isRunIDPrefix(arg) {
		return "", badRunID(arg)
	}
	all, err := runIDs(dir)
	if err != nil {
		return "", fmt.Errorf("find run %s: %w", arg, err)
	}
	var ids []string
	for _, id := range all {
		if strings.HasSuffix(id, arg) || strings.HasPrefix(id, arg) {
			ids = append(ids, id)
		}
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("no run id ends or begins with %s in %s (it may have been pruned; 'knotd runs' lists the runs)", arg, dir)
	case 1:
		return ids[0], nil
	}
	slices.Sort(ids)
	const shown = 10
	list := ids
	more := ""
	if len(list) > shown {
		list, more = list[:shown], fmt.Sprintf(" and %d more", len(ids)-shown)
	}
	return "", usageError{fmt.Sprintf("knotd runs show: %s names %d runs: %s%s; give more of the id (see knotd runs --help)", arg, len(ids), strings.Join(list, ", "), more)}
}

func showRun(dir, arg string, jsonOut bool, stdout, stderr io.Writer) error {
	runID, err := resolveRunID(dir, arg)
	if err != nil {
		return err
	}
	events, warns, err := transcript.ReadRun(dir, runID)
	switch {
	case errors.Is(err, transcript.ErrBadRunID):
		return badRunID(runID)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no run %s in %s (it may have been pruned)", runID, dir)
	case err != nil:
		return fmt.Errorf("read run %s: %w", runID, err)
	}
	for _, wn := range warns {
		fmt.Fprintf(stderr, "knotd: run %s: %s\n", runID, wn)
	}
	if !jsonOut {
		if err := transcript.Render(stdout, events); err != nil {
			return fmt.Errorf("print run %s: %w", runID, err)
		}
		return nil
	}
	for _, e := range events {
		line, err := e.MarshalLine()
		if err != nil {
			return fmt.Errorf("print run %s: %w", runID, err)
		}
		if _, err := stdout.Write(line); err != nil {
			return fmt.Errorf("print run %s: %w", runID, err)
		}
	}
	return nil
}

func pruneRuns(dir string, o runsOptions, w io.Writer) error {
	deleted, err := transcript.Prune(dir, o.keepDays, o.keepNum, time.Now())
	fmt.Fprintf(w, "deleted %d run transcripts from %s\n", len(deleted), dir)
	if err != nil {
		return fmt.Errorf("prune runs: %w", err)
	}
	return nil
}

// roundDuration rounds d for people: to the millisecond, or to the
// microsecond below one (a digest run).
func roundDuration(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(time.Millisecond)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// badRunID is the usage error for a RUN_ID that is not a run id.
func badRunID(id string) error {
	return usageError{fmt.Sprintf("knotd runs show: %q is not a run id (a UUID such as the one in a tie-off's <!-- knot:run ... --> marker)", id)}
}
