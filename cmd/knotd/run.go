package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/ignore"
	"github.com/knotd/knotd/internal/vault"
)

// Exit statuses of knotd (docs/commands.md).
const (
	exitOK     = 0
	exitFailed = 1 // --once: at least one run failed
	exitUsage  = 2 // usage or configuration error
	exitLocked = 3 // the vault is locked by another knotd
)

var (
	// errSilent marks an error that has already been reported.
	errSilent = errors.New("reported")
	// errRunsFailed is returned by --once when at least one run failed.
	errRunsFailed = fmt.Errorf("%w: runs failed", errSilent)
)

// usageError is a mistake on the command line.
type usageError struct{ msg string }

// Error is the message, pointing to knotd's --help, or to the subcommand's
// for a message that begins with it, unless it names a help already.
func (e usageError) Error() string {
	if strings.Contains(e.msg, "--help") {
		return e.msg
	}
	if rest, ok := strings.CutPrefix(e.msg, "knotd "); ok {
		// A subcommand's ("knotd runs show: ..."): its own help.
		cmd, _, _ := strings.Cut(rest, " ")
		return e.msg + " (see knotd " + strings.TrimSuffix(cmd, ":") + " --help)"
	}
	return e.msg + " (see knotd --help)"
}

// exitCode maps run's error to knotd's exit status.
func exitCode(err error) int {
	var ue usageError
	var le *vault.LockedError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errRunsFailed):
		return exitFailed
	case errors.As(err, &ue), errors.Is(err, flag.ErrHelp), errors.Is(err, vault.ErrConfig):
		return exitUsage
	case errors.As(err, &le), errors.Is(err, vault.ErrLocked):
		return exitLocked
	}
	return exitFailed
}

// options are knotd's parsed command line.
type options struct {
	once, jsonOut, dryRun, all, version bool
	takeOver                            bool
	agent, config, logLevel, logFormat  string
	explain                             string
	debounce, maxWait, timeout, poll    time.Duration
	concurrency                         int
	vault                               string
	set                                 map[string]bool // flags given explicitly
}

// run is knotd: it parses args, wires the vault and runs it until ctx ends
// (watch mode) or the pass is done (--once). An error closing the vault
// (the state store, the lock) is returned when nothing failed before it.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	if len(args) > 0 && args[0] == "help" {
		// knotd help is knotd --help; knotd help CMD is knotd CMD --help.
		switch {
		case len(args) == 1:
			args = []string{"--help"}
		case len(args) == 2 && slices.Contains(commands, args[1]) && args[1] != "help":
			args = []string{args[1], "--help"}
		default:
			return usageError{fmt.Sprintf("knotd help: %s", helpTopicError(args[1:]))}
		}
	}
	if len(args) > 0 && args[0] == "trust" {
		return runTrust(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "runs" {
		return runRuns(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "reset" {
		return runReset(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "console" {
		return runConsole(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && slices.Contains([]string{"status", "run", "retry", "pause", "resume"}, args[0]) {
		return runControlCommand(ctx, args[0], args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "doctor" {
		return runDoctor(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "service" {
		return runService(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "hook" {
		return runHook(args[1:], stdin, stdout)
	}
	o, err := parseFlags(args, stdout)
	if errors.Is(err, errSilentHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := mistypedCommand(o.vault); err != nil {
		return err
	}
	if o.version {
		fmt.Fprintln(stdout, "knotd", version())
		return nil
	}
	log, err := newLogger(stderr, o.logLevel, o.logFormat)
	if err != nil {
		return err
	}
	root, err := vaultRoot(o.vault, log)
	if err != nil {
		return err
	}
	if o.explain != "" {
		return explainIgnore(root, o, stdout)
	}
	vopts := vault.Options{
		Logger:     log,
		ConfigFile: o.config,
		Flags:      overrides(o),
		Grace:      agentGrace,
	}
	logDebug(log, root, o, args)
	if o.dryRun {
		once := vault.OnceOptions{All: o.all, TakeOver: o.takeOver}
		err := vault.DryRun(ctx, root, vopts, once, stdout)
		var locked *vault.LockedError
		if errors.As(err, &locked) {
			return dryRunBeside(ctx, root, vopts, once, stdout, err)
		}
		return err
	}
	v, err := vault.Open(root, vopts)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := v.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	defer sayStopping(ctx, log, v.Control().Running)()
	if o.once {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer onHangUp(cancel)()
		return runOnce(ctx, v, o, stdout, stderr)
	}
	return watch(ctx, v, o, log)
}

// commands are knotd's subcommands: a first argument that names one runs
// it, any other is the VAULT.
var commands = []string{"trust", "runs", "reset", "console", "status", "run", "retry", "pause", "resume", "doctor", "service", "hook", "help"}

// helpTopicError says what is wrong with the arguments of knotd help.
func helpTopicError(args []string) string {
	if len(args) > 1 {
		return "one command at most, got " + strings.Join(args, " ")
	}
	msg := fmt.Sprintf("no command %q", args[0])
	if near := suggestWord(commands, args[0]); near != "" {
		msg += fmt.Sprintf("; did you mean %q?", near)
	}
	return msg + " (knotd --help lists the commands)"
}

// mistypedCommand returns a usage error when arg, knotd's VAULT, is no
// folder that exists but looks like a mistyped subcommand ("staus"): it
// says which one was meant. A folder of that name is a VAULT, and nothing
// is said.
func mistypedCommand(arg string) error {
	if arg == "" || strings.ContainsAny(arg, `/\.`) || exists(arg) {
		return nil
	}
	near := suggestWord(commands, arg)
	if near == "" {
		return nil
	}
	return usageError{fmt.Sprintf("unknown command %q; did you mean %q? (no folder %s exists either, to watch as the VAULT)", arg, near, arg)}
}

// dryRunBeside is the dry run while another knotd holds the vault (locked
// is the error saying so): a dry run only reads, so it asks that knotd for
// a copy of its state store and reads the copy. If that knotd cannot be
// asked (an older one, or no control socket), locked is the answer.
func dryRunBeside(ctx context.Context, root string, vopts vault.Options, once vault.OnceOptions, stdout io.Writer, locked error) (err error) {
	sock, known, err := vault.ControlSocket("", root)
	if err != nil || !known {
		return locked
	}
	c := &control.Client{Path: sock}
	st, err := c.Status(ctx)
	if err != nil {
		return fmt.Errorf("%w; and it cannot be asked for a copy of its state for the dry run (%v)", locked, err)
	}
	copyPath, err := c.CopyState(ctx)
	if err != nil {
		return fmt.Errorf("%w; and it did not give a copy of its state for the dry run (%v)", locked, err)
	}
	defer func() {
		if rerr := os.Remove(copyPath); rerr != nil && err == nil {
			err = fmt.Errorf("remove the copy of the state: %w", rerr)
		}
	}()
	fmt.Fprintf(stdout, "knotd (pid %d) is running on this vault: this dry run reads a copy of its state taken now; the running knotd processes these changes itself, after their quiet period\n\n", st.PID)
	vopts.StateCopy = copyPath
	return vault.DryRun(ctx, root, vopts, once, stdout)
}

// runOnce does one pass and prints the summary.
func runOnce(ctx context.Context, v *vault.Vault, o options, stdout, stderr io.Writer) error {
	opts := vault.OnceOptions{All: o.all, TakeOver: o.takeOver}
	if !o.jsonOut && isTerminal(stderr) {
		opts.Progress = progressPrinter(stderr)
	}
	sum, err := v.Once(ctx, opts)
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("interrupted after %s; what did not finish is processed by the next pass", plural(sum.Ran, "run"))
	}
	if err != nil {
		return err
	}
	if sum.Unanswered != "" {
		// Said on stderr whatever the output: a pass that stands by is
		// no failure, but nobody may answer the vault.
		fmt.Fprintf(stderr, "knotd --once: nobody may answer this vault: %s\n", sum.Unanswered)
	}
	if sum.Standby != "" && !o.jsonOut {
		how := sum.StandbyHow
		if how == "" {
			how = "knotd --take-over"
		}
		fmt.Fprintf(stdout, "knotd --once: %s; this device stands by and ran nothing. To answer from here: %s\n", sum.Standby, how)
		return nil
	}
	if o.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(sum); err != nil {
			return fmt.Errorf("write summary: %w", err)
		}
	} else {
		printSummary(stdout, sum)
	}
	if sum.Failed > 0 {
		return errRunsFailed
	}
	return nil
}

func printSummary(w io.Writer, s vault.Summary) {
	if s.Adopted > 0 {
		fmt.Fprintf(w, "adopted %s as already processed (no agent runs); later passes process what changes. Use --all to run them all.\n", plural(s.Adopted, "existing note"))
	}
	for _, r := range s.Runs {
		status := string(r.Outcome)
		line := fmt.Sprintf("%-8s %-8s %s", status, r.Event, r.Strand)
		if r.Reason != "" && r.Outcome != "ok" {
			line += "  (" + r.Reason + ")"
		}
		fmt.Fprintln(w, line)
	}
	for _, p := range s.Paused {
		fmt.Fprintf(w, "%-8s %-8s %s  (knotd resume %s answers its change)\n", "paused", "-", p.Note, p.Note)
	}
	for _, d := range s.Deferred {
		fmt.Fprintf(w, "%-8s %-8s %s  (%s; knotd run %s runs it now)\n", "waiting", "-", d.Note, d.Why, d.Note)
	}
	line := fmt.Sprintf("knotd --once: runs: %d (%d ok, %d failed), changes recorded without a run: %d", s.Ran, s.OK, s.Failed, s.Skipped)
	if len(s.Paused) > 0 {
		line += fmt.Sprintf(", not run (paused): %d", len(s.Paused))
	}
	if len(s.Deferred) > 0 {
		line += fmt.Sprintf(", not run (waiting for the day's budget): %d", len(s.Deferred))
	}
	fmt.Fprintf(w, "%s, in %s\n", line, s.Duration.Round(time.Millisecond))
}

func progressPrinter(w io.Writer) func(done, total int, rel string) {
	return func(done, total int, rel string) {
		if done >= total {
			fmt.Fprintf(w, "\r\033[K")
			return
		}
		if len(rel) > 60 {
			rel = "…" + rel[len(rel)-59:]
		}
		fmt.Fprintf(w, "\r\033[K[%d/%d] %s", done, total, rel)
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// newLogger returns knotd's logger.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError{fmt.Sprintf("--log-level %q: want debug, info, warn or error", level)}
	}
	hopts := &slog.HandlerOptions{Level: lv, ReplaceAttr: utcTimes}
	var h slog.Handler
	switch format {
	case "text":
		h = slog.NewTextHandler(w, hopts)
	case "json":
		h = slog.NewJSONHandler(w, hopts)
	default:
		return nil, usageError{fmt.Sprintf("--log-format %q: want text or json", format)}
	}
	return slog.New(h), nil
}

// logDebug says, at the debug level, which knotd runs on which vault with
// which configuration: what a report of a problem needs first.
func logDebug(log *slog.Logger, root string, o options, args []string) {
	ctx := context.Background()
	if !log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	log.Debug("knotd starting", "version", version(), "pid", os.Getpid(), "args", args, "vault", root)
	if dir, ok, err := vault.RunsDir("", root); err == nil {
		if ok {
			log.Debug("run transcripts", "dir", dir)
		} else {
			log.Debug("first run on this vault on this machine: its state folder is made now")
		}
	}
	c, err := config.Load(config.LoadOptions{Vault: root, UserFile: o.config, Flags: overrides(o)})
	if err != nil {
		return // the vault reports it
	}
	agents := make([]string, 0, len(c.Agents))
	for name, a := range c.Agents {
		what := a.Preset
		if what == "" && len(a.Command) > 0 {
			what = a.Command[0]
		}
		agents = append(agents, name+"="+what)
	}
	slices.Sort(agents)
	log.Debug("configuration", "files", c.Files, "default_agent", c.DefaultAgent, "debounce", c.Debounce, "max_wait", c.MaxWait,
		"concurrency", c.Concurrency, "poll", c.Poll, "ignore", c.Ignore, "agents", agents, "runner", c.Runner, "clamped", c.Clamped)
}

// utcTimes is the loggers' ReplaceAttr: every time knotd logs, the
// record's own and any time attribute, is in UTC, as is every time knotd
// prints or writes.
func utcTimes(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindTime {
		a.Value = slog.TimeValue(a.Value.Time().UTC())
	}
	return a
}

// vaultArg returns the VAULT among pos, the positional arguments of knotd
// cmd ("" for knotd itself), or "" when there is none; more than one is a
// usage error.
func vaultArg(cmd string, pos []string) (string, error) {
	switch len(pos) {
	case 0:
		return "", nil
	case 1:
		return pos[0], nil
	}
	msg := fmt.Sprintf("one VAULT at most, got %d: %s", len(pos), strings.Join(pos, " "))
	if cmd != "" {
		msg = "knotd " + cmd + ": " + msg
	}
	return "", usageError{msg}
}

// vaultRoot resolves the VAULT argument (default: the current directory)
// to the vault it belongs to: an absolute directory path, symbolic links
// resolved, and the vault above it when it is a folder of a vault (one
// with .knot above it, found as git finds .git). log, if not nil, is told
// when the vault was found above.
func vaultRoot(arg string, log *slog.Logger) (string, error) {
	if arg == "" {
		arg = "."
	}
	abs, err := filepath.Abs(arg)
	if err != nil {
		return "", usageError{fmt.Sprintf("vault %s: %v", arg, err)}
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", usageError{fmt.Sprintf("vault %s: %v", arg, unwrapPath(err))}
	}
	if !fi.IsDir() {
		return "", usageError{fmt.Sprintf("vault %s: not a folder (VAULT is the folder of your notes; to answer one note now: knotd run %s)", arg, arg)}
	}
	root, above, err := vault.FindRoot(abs)
	if err != nil {
		return "", usageError{fmt.Sprintf("vault %s: %v", arg, unwrapPath(err))}
	}
	if above && log != nil {
		log.Info("this folder is inside a vault (a folder with .knot above it): knotd answers that whole vault", "folder", abs, "vault", root)
	}
	return root, nil
}

// knownVault is vaultRoot for the commands that work on a vault knotd
// made already (status, run, retry, pause, resume, reset, console):
// the folder must be in a vault, one with .knot in it or above it. Only
// watching or a pass (knotd VAULT, knotd --once VAULT) makes a folder a
// vault; the other commands create nothing in a folder that is none.
func knownVault(arg, cmd string) (string, error) {
	root, err := vaultRoot(arg, nil)
	if err != nil {
		return "", err
	}
	if err := checkVault(root, arg, cmd); err != nil {
		return "", err
	}
	return root, nil
}

// checkVault refuses root, found for arg (a folder or a note), when it is
// no vault: a folder without .knot (FindRoot found none above it).
func checkVault(root, arg, cmd string) error {
	fi, err := os.Lstat(filepath.Join(root, ignore.VaultMarker))
	if err == nil && fi.IsDir() {
		return nil
	}
	if arg == "" {
		arg = "the current folder"
	}
	return usageError{fmt.Sprintf("knotd %s: %s is not in a knotd vault (no %s folder in %s or above it); run `knotd %s` or `knotd --once %s` first to make it one",
		cmd, arg, ignore.VaultMarker, root, root, root)}
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func overrides(o options) config.Settings {
	var f config.Settings
	if o.agent != "" {
		f.DefaultAgent = &o.agent
	}
	if o.set["debounce"] {
		f.Debounce = &o.debounce
	}
	if o.set["max-wait"] {
		f.MaxWait = &o.maxWait
	}
	if o.set["timeout"] {
		f.Timeout = &o.timeout
	}
	if o.set["poll"] {
		f.Poll = &o.poll
	}
	if o.set["concurrency"] {
		f.Concurrency = &o.concurrency
	}
	return f
}

// explainIgnore is --explain-ignore PATH. An absolute PATH must be inside
// the vault. A relative PATH is read as every other command-line path is,
// relative to the current directory, when that leads inside the vault;
// otherwise (the current directory is outside the vault, say) it is read
// relative to the vault's root, the form in which knotd's logs and ignore
// files name paths. Where both lead inside the vault, the one that exists
// wins, the current directory's when both or neither do.
func explainIgnore(root string, o options, w io.Writer) error {
	rel, err := pathInVault(root, "--explain-ignore", o.explain)
	if err != nil {
		return err
	}
	msg, err := vault.ExplainPath(root, vault.Options{ConfigFile: o.config}, rel)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, msg)
	return nil
}

// pathInVault turns PATH, given to the flag named flagName
// (--explain-ignore, --note), into a slash-separated path relative to
// root (see explainIgnore for how a relative PATH is read).
func pathInVault(root, flagName, path string) (string, error) {
	inside := func(abs string) (string, bool) {
		r, err := filepath.Rel(root, resolveExisting(abs))
		if err != nil || !filepath.IsLocal(r) {
			if r == "." {
				return r, true
			}
			return "", false
		}
		return filepath.ToSlash(r), true
	}
	if filepath.IsAbs(path) {
		if r, ok := inside(path); ok {
			return r, nil
		}
		return "", usageError{fmt.Sprintf("%s %s: not inside the vault %s", flagName, path, root)}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", usageError{fmt.Sprintf("%s %s: %v", flagName, path, err)}
	}
	fromCwd, cwdOK := inside(abs)
	vaultRel := filepath.ToSlash(filepath.Clean(path))
	vaultOK := filepath.IsLocal(path)
	switch {
	case cwdOK && vaultOK && fromCwd != vaultRel && !exists(abs) && exists(filepath.Join(root, path)):
		return vaultRel, nil
	case cwdOK:
		return fromCwd, nil
	case vaultOK:
		return vaultRel, nil
	}
	return "", usageError{fmt.Sprintf("%s %s: not inside the vault %s (a relative PATH is read from the current directory, or else from the vault's root)", flagName, path, root)}
}

// resolveExisting resolves the symbolic links of abs's longest existing
// leading part, as vaultRoot does for the vault, so that the two compare.
func resolveExisting(abs string) string {
	rest := ""
	for p := abs; ; p = filepath.Dir(p) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		if filepath.Dir(p) == p {
			return abs
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

const trustUsage = `usage: knotd trust [VAULT]

Trust the vault's .knot/config.yaml as it is now, so that the agents it defines may run.
The file's SHA-256 is recorded in your user config directory; any later change to it
makes it untrusted again. A knotd running on the vault on this machine is told: it
loads its configuration again (as on SIGHUP) and uses the trusted file from its next
run on; knotd trust says whether it did.
`

const resetUsage = `usage: knotd reset [--config FILE] NOTE...

Start a new conversation for each NOTE (a path to a note in a vault): its next
run starts afresh, in a new session, without the agent's memory of the old one.
Nothing runs now. knotd gives the note a new session in its state and, where the
note holds a knot_session, writes the new one there (so that it travels with
the note). While another knotd holds the vault, the note gets knot_session: new,
which that knotd turns into a new session. Setting knot_session: new in a note's
frontmatter yourself does the same.

Flags:
`

func runTrust(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("knotd trust", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	pos, err := parseArgs(fs, "trust", args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, trustUsage)
		return nil
	}
	if err != nil {
		return err
	}
	arg, err := vaultArg("trust", pos)
	if err != nil {
		return err
	}
	root, err := vaultRoot(arg, nil)
	if err != nil {
		return err
	}
	dir, err := config.UserConfigDir()
	if err != nil {
		return err
	}
	t, err := config.Trust(dir, root)
	if err != nil {
		return err
	}
	agents := "no agents"
	if len(t.Agents) > 0 {
		agents = "agents " + strings.Join(t.Agents, ", ")
	}
	fmt.Fprintf(stdout, "trusted %s (sha256 %s, defines %s); any change to it makes it untrusted again\n", t.File, t.SHA256, agents)
	return tellDaemon(ctx, root, stdout)
}

// tellDaemon has the knotd answering the vault at root on this machine, if
// one runs, load its configuration again, so that it uses the trust just
// given, and says what happened.
func tellDaemon(ctx context.Context, root string, stdout io.Writer) error {
	sock, known, err := vault.ControlSocket("", root)
	if err != nil {
		return err
	}
	if !known {
		fmt.Fprintln(stdout, "no knotd runs for this vault on this machine: the next one started uses it")
		return nil
	}
	c := &control.Client{Path: sock}
	st, err := c.Status(ctx)
	switch {
	case errors.Is(err, control.ErrNoDaemon):
		fmt.Fprintln(stdout, "no knotd runs for this vault on this machine: the next one started uses it")
		return nil
	case err != nil:
		return fmt.Errorf("knotd trust: the running knotd could not be asked to use it (%w); reload it (kill -HUP its pid) or restart it", err)
	}
	if _, err := c.ReloadConfig(ctx); err != nil {
		return fmt.Errorf("knotd trust: the running knotd (pid %d) did not reload its configuration: %w; it goes on with the one it had (kill -HUP %d, or a restart, tries again)", st.PID, err, st.PID)
	}
	fmt.Fprintf(stdout, "the running knotd (pid %d) reloaded its configuration and now uses it\n", st.PID)
	return nil
}

// runReset is knotd reset: a new conversation for each note named.
func runReset(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("knotd reset", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	config := fs.String("config", "", "user config `FILE` (default: knotd's file in your config directory)")
	fs.Usage = func() {}
	notes, help, err := parseCommand(fs, "reset", resetUsage, args, stdout)
	if help || err != nil {
		return err
	}
	if len(notes) == 0 {
		return usageError{"knotd reset needs at least one NOTE"}
	}
	type target struct{ root, rel, arg string }
	var targets []target
	for _, arg := range notes {
		abs, err := filepath.Abs(arg)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			return usageError{fmt.Sprintf("%s: %v", arg, unwrapPath(err))}
		}
		root, _, err := vault.FindRoot(filepath.Dir(abs))
		if err != nil {
			return usageError{fmt.Sprintf("%s: %v", arg, unwrapPath(err))}
		}
		if err := checkVault(root, arg, "reset"); err != nil {
			return err
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil || !filepath.IsLocal(rel) {
			return usageError{fmt.Sprintf("%s is not inside the vault %s", arg, root)}
		}
		targets = append(targets, target{root, filepath.ToSlash(rel), arg})
	}
	failed := false
	say := func(r vault.Reset, err error, arg string) {
		switch {
		case err != nil:
			failed = true
			fmt.Fprintf(stderr, "knotd reset: %s: %v\n", arg, err)
		case r.Session == "" && !r.Wrote:
			fmt.Fprintf(stdout, "%s: no conversation yet; its first run starts one\n", arg)
		case r.Session == "":
			fmt.Fprintf(stdout, "%s: wrote knot_session: new; its next run starts a new conversation\n", arg)
		default:
			fmt.Fprintf(stdout, "%s: new session %s (was %s); its next run starts a new conversation\n", arg, r.Session, orNone(r.Was))
		}
	}
	for i := 0; i < len(targets); {
		root := targets[i].root
		j := i
		for j < len(targets) && targets[j].root == root {
			j++
		}
		v, err := vault.Open(root, vault.Options{Logger: slog.New(slog.DiscardHandler), ConfigFile: *config})
		var locked *vault.LockedError
		switch {
		case errors.As(err, &locked):
			// Another knotd answers this vault: ask it through the note.
			for _, t := range targets[i:j] {
				r, err := vault.ResetNote(root, t.rel)
				say(r, err, t.arg)
			}
		case err != nil:
			return err
		default:
			for _, t := range targets[i:j] {
				r, err := v.ResetStrand(t.rel)
				say(r, err, t.arg)
			}
			if err := v.Close(); err != nil {
				return err
			}
		}
		i = j
	}
	if failed {
		return errSilent
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
