package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

const usageText = `knotd watches a folder of Markdown notes (a vault). When a note settles
after an edit, knotd runs your agent CLI on it, with an Event Context block
prepended to the prompt, and appends the reply to the note's tie-off file
(notes/plan.md -> notes/plan.tieoff.md): the note's history, in order.

Usage:
  knotd [flags] [VAULT]          watch VAULT (default: the current directory)
                                 until interrupted (Ctrl-C, SIGTERM)
  knotd --once [flags] [VAULT]   process every note that changed since the
                                 last pass, then exit (for scripts and cron)
  knotd trust [VAULT]            allow the agents defined in VAULT/.knot/config.yaml
  knotd runs [--note PATH] [--since WHEN] [--limit N] [-f] [--json] [VAULT]
                                 list the runs, newest first, from their
                                 transcripts in knotd's state directory;
                                 -f keeps printing new runs until Ctrl-C
  knotd runs --cost [--since WHEN] [--note PATH] [--json] [VAULT]
                                 tokens and cost (as the CLIs reported them)
                                 per day, agent, folder and note
  knotd runs show RUN_ID [--json] [VAULT]
                                 print one run: command line, prompt, output,
                                 outcome; RUN_ID is the short id 'knotd
                                 runs' shows (the id's end), or the id in
                                 the tie-off's <!-- knot:run RUN_ID -->
                                 marker
  knotd runs --keep DAYS [--keep-count N] [VAULT]
                                 delete older run transcripts ('knotd runs
                                 --help' says more)
  knotd reset NOTE...            start a new conversation for each NOTE at
                                 its next run (or set knot_session: new in it)
  knotd status [--json] [VAULT]  what the running knotd does: runs in
                                 progress and waiting, failures, paused notes
  knotd run NOTE...              answer each NOTE now, changed or not
  knotd retry [--since WHEN] [VAULT]
                                 run again the notes whose last run failed
  knotd pause [--why TEXT] NOTE... / knotd resume [NOTE...]
                                 pause notes (their changes wait), resume them
                                 ('knotd status --help' says more)
  knotd approve ID [--why TEXT] [VAULT] / knotd deny ID [--why TEXT] [VAULT]
                                 answer a question an agent asked
                                 (permissions: ask): let its call run, or not
  knotd withdraw ID [VAULT]      end a question with no answer
  knotd service install|uninstall [--dry-run] [--no-start] [VAULT]
                                 run knotd on VAULT as a service of your user
                                 (systemd on Linux, launchd on macOS)
  knotd console [--addr 127.0.0.1:PORT] [--no-open] [VAULT]
                                 the same in a local web page, live: notes,
                                 runs and their output, tie-offs, buttons
  knotd doctor [--agents-answer] [--json] [VAULT]
                                 check the agents, watch limits, trust, the
                                 state store and the sync setup; say what to fix
  knotd --explain-ignore PATH [VAULT]
                                 say whether knotd ignores PATH, and why
  knotd git setup [VAULT]        merge tie-offs by run id in git: the
                                 .gitattributes line and the merge driver,
                                 knotd merge-tieoff %O %A %B %P
  knotd hook claude-pretooluse ANSWERS_FILE
                                 knotd's own Claude Code hook (permissions:
                                 ask): Claude Code runs it, not you

Flags may come before or after VAULT, for every command. 'knotd help CMD'
(or 'knotd CMD --help') says more of each command. knotd prints and logs
every time in UTC.

On first contact with a vault knotd adopts the notes already there: it
records them as processed and runs nothing, except notes whose tie-off shows
they changed since their last answer, which run once. From
then on every created, modified or deleted note gets exactly one run,
including changes made while knotd was not running; a note with a
knot_schedule also runs when it falls due (once, late, for what fell due
while knotd was not running). --all runs every note instead; --no-adopt
runs the notes without an answer too (CI on a fresh checkout). VAULT may
be any folder of a vault (one with .knot above it).

One device answers a vault synced to several: the first to run knotd on it,
the one its .knot/config.yaml names (runner: NAME), or the one you tell to
(--take-over). On the others knotd stands by and says which device answers.
knotd keeps its own files (state, lock, transcripts) in your state directory
($XDG_STATE_HOME/knotd, ~/.local/state/knotd), never in the vault.

Examples:
  knotd ~/notes                          watch with the built-in digest agent
  knotd --agent claude ~/notes           use the claude preset from your config
  knotd --once --json ~/notes            one pass, machine-readable summary
  knotd --once --dry-run ~/notes         show what would run, prompts included

Flags:
`

const usageTail = `
Exit status (--once): 0 every run succeeded or nothing to do, 1 at least one
run failed, 2 usage or configuration error, 3 the vault is in use by another
knotd. In watch mode knotd exits 0 after a clean shutdown: on SIGINT or
SIGTERM it says how many running agents it waits for, gives them 10s, kills
what remains; a second signal stops it at once.

Configuration: $XDG_CONFIG_HOME/knotd/config.yaml (or --config FILE), then
VAULT/.knot/config.yaml, then flags. A vault's config may choose agents and
tune timing, ignores and limits, but it may define commands only once you
trust it with 'knotd trust VAULT'. Notes choose agents with knot_agent in
their frontmatter. Every key: docs/configuration.md.
`

// mainFlagSet returns knotd's flags, bound to o.
func mainFlagSet(o *options) *flag.FlagSet {
	fs := flag.NewFlagSet("knotd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&o.once, "once", false, "process every pending note once, then exit")
	fs.StringVar(&o.agent, "agent", "", "agent `NAME` to use (default: default_agent from config, else the built-in digest)")
	fs.StringVar(&o.config, "config", "", "user config `FILE` (default $XDG_CONFIG_HOME/knotd/config.yaml)")
	fs.DurationVar(&o.debounce, "debounce", 0, "quiet period a note must settle for before it runs (default 2s)")
	fs.DurationVar(&o.maxWait, "max-wait", 0, "longest a note that keeps changing waits for its run (default 15s)")
	fs.IntVar(&o.concurrency, "concurrency", 0, "how many agents may run at once, across notes (default 2)")
	fs.DurationVar(&o.timeout, "timeout", 0, "wall-clock limit of one agent run (default 10m)")
	fs.BoolVar(&o.jsonOut, "json", false, "with --once: print the summary as JSON")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print each pending note's event and full prompt; run and change nothing\n(while a knotd runs on the vault, from a copy of its state)")
	fs.BoolVar(&o.all, "all", false, "treat every note as pending (run them all), not only changed ones")
	fs.BoolVar(&o.noAdopt, "no-adopt", false, "on first contact, run the notes whose tie-off holds no answer instead of adopting them\n(for CI on a fresh checkout, where every pass is first contact)")
	fs.DurationVar(&o.poll, "poll", 0, "reconcile every `DUR` instead of using file system events (network and FUSE mounts)")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug (adds the version, vault and configuration), info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&o.explain, "explain-ignore", "", "say whether `PATH` is ignored, and why, then exit; a relative PATH is\nread from the current directory, or else from the vault's root")
	fs.BoolVar(&o.version, "version", false, "print the version (module version, commit, Go release) and exit")
	fs.BoolVar(&o.takeOver, "take-over", false, "make this device the vault's answering device, whichever device answered it before, unless the vault config names another with runner:")
	return fs
}

func parseFlags(args []string, stdout io.Writer) (options, error) {
	o := options{set: map[string]bool{}}
	fs := mainFlagSet(&o)
	// The flag package calls Usage itself on every parse error; knotd
	// prints the usage once, for -h and --help only, and a one-line error
	// otherwise.
	fs.Usage = func() {}
	pos, err := parseArgs(fs, "", args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usageText)
		printDefaults(stdout, fs)
		fmt.Fprint(stdout, usageTail)
		return o, errSilentHelp
	}
	if err != nil {
		return o, err
	}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if o.vault, err = vaultArg("", pos); err != nil {
		return o, err
	}
	if o.jsonOut && !o.once {
		return o, usageError{"--json goes with --once"}
	}
	if o.concurrency < 0 || (o.set["concurrency"] && o.concurrency == 0) {
		return o, usageError{"--concurrency must be at least 1"}
	}
	for name, d := range map[string]any{"debounce": o.debounce, "max-wait": o.maxWait, "timeout": o.timeout, "poll": o.poll} {
		if o.set[name] && d.(interface{ Nanoseconds() int64 }).Nanoseconds() <= 0 {
			return o, usageError{fmt.Sprintf("--%s must be positive", name)}
		}
	}
	return o, nil
}

// printDefaults prints the flags as knotd's documentation spells them,
// with two dashes ("--once", "--agent NAME"), one for a one-letter flag
// ("-f").
func printDefaults(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		switch name {
		case "duration":
			name = "DUR"
		case "int":
			name = "N"
		case "string":
			name = strings.ToUpper(f.Name[strings.LastIndexByte(f.Name, '-')+1:]) // --log-level LEVEL
		}
		line := "  --" + f.Name
		if len(f.Name) == 1 {
			line = "  -" + f.Name // -f
		}
		if name != "" {
			line += " " + name
		}
		switch f.DefValue {
		case "", "0", "false", "0s":
		default:
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
	})
}

// errSilentHelp ends a run after --help was printed: exit status 0.
var errSilentHelp = errHelp{}

type errHelp struct{}

func (errHelp) Error() string { return "help printed" }

// version says which knotd this is: the module version (a tag when
// installed with go install ...@version, "(devel)" for a build from a
// checkout), the VCS revision and its time when the build recorded them,
// "+ local changes" when the checkout had any, and the Go release.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel; no build information)"
	}
	return versionOf(bi)
}

func versionOf(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	var parts []string
	if rev := settings["vcs.revision"]; rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		p := "commit " + rev
		if t := settings["vcs.time"]; t != "" {
			p += " (" + t + ")"
		}
		if settings["vcs.modified"] == "true" {
			p += " + local changes"
		}
		parts = append(parts, p)
	}
	if bi.GoVersion != "" {
		parts = append(parts, "built with "+bi.GoVersion)
	}
	if len(parts) == 0 {
		return v
	}
	return v + ", " + strings.Join(parts, ", ")
}
