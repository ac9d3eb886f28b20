package vault

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/device"
	"github.com/knotd/knotd/internal/scheduler"
	"github.com/knotd/knotd/internal/state"
	"github.com/knotd/knotd/internal/statedir"
	"github.com/knotd/knotd/internal/tieoff"
	"github.com/knotd/knotd/internal/vault/internal/answer"
	"github.com/knotd/knotd/internal/vault/internal/budget"
	"github.com/knotd/knotd/internal/vault/internal/ctl"
	"github.com/knotd/knotd/internal/vault/internal/pipeline"
	"github.com/knotd/knotd/internal/vault/internal/reconcile"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/frontmatter"
	"github.com/knotd/knotd/internal/ignore"
	"github.com/knotd/knotd/internal/strand"
)

// ErrConfig is wrapped by every error about knotd's configuration (a bad
// config file, an untrusted vault config, an unknown agent): the user must
// fix something before knotd can run (exit status 2).
var ErrConfig = errors.New("configuration error")

// Options configures Open.
type Options struct {
	// Logger receives knotd's log; nil discards it.
	Logger *slog.Logger
	// ConfigDir is knotd's directory in the user's config directory (""
	// means config.UserConfigDir()).
	ConfigDir string
	// ConfigFile is the user config file given with --config.
	ConfigFile string
	// Flags holds the settings given on the command line; they win over
	// both config files. Agent is --agent.
	Flags config.Settings
	// Agent runs the agents; nil means an agentrun.Runner with the
	// configured limits. Tests substitute their own.
	Agent AgentRunner
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Grace is how long running agents may finish after knotd is told to
	// stop before they are killed (default 10s).
	Grace time.Duration
	// StateHome is knotd's state directory, where each vault has a folder
	// for the machine's own files ("" means statedir.Home()).
	StateHome string
	// Heartbeat is how often this device writes its heartbeat into the
	// vault and decides again whether it answers (0: device.Interval).
	Heartbeat time.Duration
	// Notifier is told what the user should hear of without looking (a
	// run failed, a note paused); nil tells no one.
	Notifier Notifier
	// StateCopy, for DryRun only, is a copy of the state store that the
	// knotd answering the vault wrote (Vault.CopyState): the dry run
	// reads it instead of the store that knotd holds, and takes no lock.
	StateCopy string
	// NoAdopt (--no-adopt) makes first contact leave the strands whose
	// tie-off holds no answer unrecorded instead of adopting them, so
	// that the pass runs them (Created): a fresh checkout in CI, where
	// every pass is first contact, answers the notes pushed since.
	NoAdopt bool
}

// Vault is one open vault: its lock, state, configuration and agent. Open
// it, call Once or Watch, then Close it.
type Vault struct {
	root string
	// fs is the vault directory, opened: every file knotd reads or writes
	// in the vault is opened through it (package vaultfs), so that no
	// symbolic link or ".." leads out of the vault.
	fs *os.Root
	// conf is the configuration, replaced whole when it is reloaded
	// (Reload, reload.go).
	conf     atomic.Pointer[config.Config]
	reloader reloader
	store    *state.Store
	lock     *statedir.Lock
	folder   statedir.Folder // the vault's folder in the state directory
	device   statedir.Device // this device
	rules    *ignore.Rules
	// agent is the AgentRunner tests gave (Options.Agent); otherwise runner,
	// replaced when the configuration is reloaded, runs the agents.
	agent  AgentRunner
	runner atomic.Pointer[agentrun.Runner]
	log    *slog.Logger
	now    func() time.Time // the clock of sections, records and devices' heartbeats (the watch loop's delays run on its timers' clock)
	grace  time.Duration
	dry    bool
	// noAdopt is Options.NoAdopt: first contact runs what it would adopt.
	noAdopt bool

	warned sync.Map // "path\x00message" → struct{}: warnings given once

	claims claims // strand paths being worked on
	// pipe is the pipeline of one strand's change: look, decide,
	// prepare, run, record (package vault/internal/pipeline).
	pipe *pipeline.Pipeline
	// adoption is first contact and the catch-up (adopt, catchUp).
	adoption adopter
	// recon looks at the disk against the state: changes, renames, and
	// sync tools' conflict copies (package vault/internal/reconcile;
	// reconHost is all it asks of the Vault).
	recon *reconcile.Reconciler

	// answering decides whether this device answers the vault (package
	// vault/internal/answer; made by open once this device is known).
	answering *answer.Device
	// watching is set while Watch runs: a failure that may pass (a full
	// disk) is tried again rather than reported and left.
	watching atomic.Bool

	// since is when the vault was opened; live is the daemon's scheduler while
	// this device answers; active the runs in progress (for status).
	since  time.Time
	live   atomic.Pointer[scheduler.Scheduler[Job]]
	active ctl.Active
	// own holds knotd's own writes into strands whose work is under way
	// (knot_session), so that the watcher does not take them for changes.
	own ownWrites
	// budget counts the day's runs and defers what goes past it
	// (package vault/internal/budget).
	budget *budget.Budget
	// obsidian is Obsidian's Excluded files setting, read at open and at
	// each reload.
	obsidian atomic.Pointer[obsidianFilters]

	// notifier is told what the user should hear of (notify.go).
	notifier Notifier
	// asks are the questions runs wait on now (questions.go).
	asks questionsOf

	// schedules are the notes' schedules and what they fired (schedules.go).
	schedules scheduleKeeper

	// observe and faults are the daemon's test seams (seams.go);
	// checkEvery is how often Watch checks, when nothing happens, that
	// the vault directory is there and retries journaled runs.
	observe    observer
	faults     faults
	checkEvery time.Duration
}

// Open validates and locks the vault at root (an absolute directory path),
// loads the configuration, opens the state store and finishes any run that
// a crash left journaled. The error wraps ErrConfig for configuration
// problems and is a *LockedError when another knotd holds the vault.
func Open(root string, opts Options) (*Vault, error) {
	return open(root, opts, false)
}

// open is Open; with dry (--dry-run) the vault changes nothing: a crash's
// journaled runs are left for the next real start, and the processor
// writes no file and no state.
func open(root string, opts Options, dry bool) (_ *Vault, err error) {
	v, err := newVault(root, opts)
	if err != nil {
		return nil, err
	}
	v.dry = dry
	defer func() {
		if err != nil {
			_ = v.Close() // the open error is the one to report
		}
	}()
	home := opts.StateHome
	if home == "" {
		if home, err = statedir.Home(); err != nil {
			return nil, err
		}
	}
	if v.device, err = statedir.LoadDevice(home); err != nil {
		return nil, err
	}
	v.answering = answer.New(answerHost{v}, answer.Options{FS: v.fs, Root: root, Dry: dry,
		ID: v.device.ID, Name: v.device.Name, Version: Version, Beat: opts.Heartbeat})
	if dry && opts.StateCopy != "" {
		// Beside the knotd that holds the lock and the store: read the
		// copy of its state it made, and write nothing.
		f, found, err := statedir.Find(home, root)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("vault: no state folder for %s", root)
		}
		v.folder = f
		s, err := state.Open(opts.StateCopy)
		if err != nil {
			return nil, err
		}
		v.store = s
		return v, nil
	}
	if v.lock, err = statedir.Acquire(home, root); err != nil {
		return nil, err
	}
	v.folder = v.lock.Folder
	if v.folder.MovedFrom != "" {
		v.log.Info("the vault was moved; its state moved with it", "from", v.folder.MovedFrom, "to", root)
	}
	if !dry {
		// .knot marks the vault for a knotd started in one of its folders
		// (see FindRoot): it answers this vault, never a second one.
		if err := v.fs.Mkdir(strand.StateDir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("vault: mark the vault with %s: %w", strand.StateDir, err)
		}
		m, err := v.lock.Migrate(v.fs)
		if err != nil {
			return nil, err
		}
		if m.Moved() {
			v.log.Info("moved knotd's own files out of the vault into the state directory, once: the vault keeps only notes, tie-offs and .knot/config.yaml",
				"to", v.folder.Dir, "state", m.State, "transcripts", m.Transcripts, "llm_logs", m.LLMLogs, "kept_aside", m.OldState)
		}
	}
	if v.store, err = v.openStore(); err != nil {
		return nil, err
	}
	if !dry {
		if err := v.endOrphans(); err != nil {
			return nil, err
		}
		if err := v.pipe.Recover(); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// openStore opens the vault's state store. If the last knotd to use it
// did not stop cleanly (a crash, a kill, a power loss), its invariants
// are checked first (state.Store.Check; a clean stop leaves nothing to
// check, and the check reads every record). A damaged store is moved aside
// (said in the log, with where it went) and a new one takes its place,
// which the first pass rebuilds from the vault's tie-offs; a store from a
// newer knotd is an error. With --dry-run the damage is only said.
func (v *Vault) openStore() (*state.Store, error) {
	path := v.folder.StateFile()
	_, err := os.Lstat(v.folder.Running())
	unclean := err == nil
	if !v.dry {
		f, err := os.OpenFile(v.folder.Running(), os.O_WRONLY|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("vault: %w", err)
		}
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("vault: %w", err)
		}
	}
	s, err := state.Open(path)
	if err == nil && unclean {
		if err = s.Check(false); err != nil {
			if cerr := s.Close(); cerr != nil {
				err = errors.Join(err, cerr)
			}
		}
	}
	if err == nil || !errors.Is(err, state.ErrCorrupt) {
		return s, err
	}
	if v.dry {
		return nil, fmt.Errorf("%w (a real start moves it aside and rebuilds the state from the vault's tie-offs)", err)
	}
	if err := v.moveStoreAside(err); err != nil {
		return nil, err
	}
	return state.Open(path)
}

// moveStoreAside moves the damaged state store (closed) aside, saying so.
// The copy is named for the second it was moved aside, with -2, -3, ...
// added when a copy of that second is there already: an earlier copy is
// never overwritten.
func (v *Vault) moveStoreAside(damage error) error {
	path := v.folder.StateFile()
	aside, err := moveAside(path, path+".damaged-"+v.now().UTC().Format("20060102T150405Z"))
	if err != nil {
		return fmt.Errorf("%w; moving it aside failed: %w", damage, err)
	}
	v.log.Error("the state store is damaged: moved it aside; a new one is rebuilt from the vault's tie-offs (notes answered there are not run again; notes changed since their last answer run once)",
		"damaged", aside, "err", damage)
	return nil
}

// moveAside renames path to base, or to base-2, base-3, ... when that name
// is taken, and returns the name it took. A hard link claims the name (it
// fails, where a rename would overwrite, when the name is taken); where the
// file system has no hard links the name is checked and then renamed to,
// which the vault's lock in the state directory makes safe (no other
// knotd moves this vault's store).
func moveAside(path, base string) (string, error) {
	const tries = 1000
	for n := 1; n <= tries; n++ {
		aside := base
		if n > 1 {
			aside = fmt.Sprintf("%s-%d", base, n)
		}
		err := os.Link(path, aside)
		switch {
		case err == nil:
			if err := os.Remove(path); err != nil {
				return "", fmt.Errorf("vault: %w", err)
			}
			return aside, nil
		case errors.Is(err, fs.ErrExist):
			continue
		}
		if _, lerr := os.Lstat(aside); lerr == nil {
			continue
		} else if !errors.Is(lerr, fs.ErrNotExist) {
			return "", fmt.Errorf("vault: %w", lerr)
		}
		if err := os.Rename(path, aside); err != nil {
			return "", fmt.Errorf("vault: %w", err)
		}
		return aside, nil
	}
	return "", fmt.Errorf("vault: %s and %d more names like it are taken", base, tries-1)
}

// newVault loads the configuration and builds a Vault without touching the
// state directory.
func newVault(root string, opts Options) (v *Vault, err error) {
	if !filepath.IsAbs(root) {
		return nil, fmt.Errorf("vault: %s is not an absolute path", root)
	}
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("vault: %s is not a directory", root)
	}
	vfs, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("vault: %w", err)
	}
	if err := checkKnotDir(vfs, root); err != nil {
		_ = vfs.Close() // read only
		return nil, err
	}
	loadOpts := config.LoadOptions{Vault: root, ConfigDir: opts.ConfigDir, UserFile: opts.ConfigFile, Flags: opts.Flags}
	cfg, err := config.Load(loadOpts)
	if err == nil {
		_, err = cfg.Agent("")
	}
	if err != nil {
		_ = vfs.Close() // read only
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	v = &Vault{
		root:  root,
		fs:    vfs,
		rules: &ignore.Rules{ConfigDir: cfg.ObsidianDir, Patterns: cfg.Ignore},
		agent: opts.Agent,
		log:   opts.Logger,
		now:   opts.Now,
		grace: opts.Grace,

		notifier: opts.Notifier,
		noAdopt:  opts.NoAdopt,

		observe:    quiet{},
		faults:     quiet{},
		checkEvery: rootCheck,
	}
	v.recon = reconcile.New(reconHost{v}, reconcile.Options{FS: vfs, Root: root, Rules: v.rules})
	v.pipe = pipeline.New(pipelineHost{v})
	v.adoption = adopter{v: v}
	v.budget = budget.New(budgetHost{v})
	v.reloader = reloader{v: v}
	v.conf.Store(cfg)
	v.reloader.loadOpts = loadOpts
	v.reloader.confStamps = v.reloader.configStamps()
	if v.log == nil {
		v.log = slog.New(slog.DiscardHandler)
	}
	for _, c := range cfg.Clamped {
		v.log.Warn("the vault config asks knotd to do more than your own configuration says, and yours applies: a vault config may make knotd do less, never more (knotd trust lets it)",
			"file", config.VaultConfigPath(root), "value", c)
	}
	if v.now == nil {
		v.now = time.Now
	}
	v.since = v.now().UTC()
	if v.grace <= 0 {
		v.grace = 10 * time.Second
	}
	v.runner.Store(&agentrun.Runner{Limits: cfg.Limits, Now: v.now, Groups: agentGroups{v}})
	v.loadObsidianFilters()
	return v, nil
}

// checkKnotDir refuses a vault whose .knot is not a real folder: a
// symbolic link (which may lead out of the vault, and would take knotd's
// writes with it) or a file.
func checkKnotDir(vfs *os.Root, root string) error {
	fi, err := vfs.Lstat(strand.StateDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("vault: %w", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: %s is a symbolic link: knotd's folder in a vault must be a real folder, since what knotd writes there (its heartbeat) would go wherever the link leads; replace it with a folder (keep its config.yaml)",
			ErrConfig, filepath.Join(root, strand.StateDir))
	case !fi.IsDir():
		return fmt.Errorf("%w: %s is not a folder: knotd keeps the vault's config.yaml and the devices' heartbeats there; move the file away",
			ErrConfig, filepath.Join(root, strand.StateDir))
	}
	return nil
}

// Version is this knotd's version, as its build recorded it.
var Version = func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Version == "" {
		return "(devel)"
	}
	return bi.Main.Version
}()

// ErrStateDamaged is wrapped by the error of a pass or daemon that found
// the state store damaged while it ran: it stops, the store is moved aside
// when the vault is closed, and the next start rebuilds it from the
// vault's tie-offs.
var ErrStateDamaged = errors.New("vault: the state store is damaged")

// stateDamaged returns an error wrapping ErrStateDamaged if the store was
// found damaged while it was used.
func (v *Vault) stateDamaged() error {
	if err := v.store.Damage(); err != nil {
		return fmt.Errorf("%w (it is moved aside as knotd stops; start knotd again and it rebuilds the state from the vault's tie-offs): %w", ErrStateDamaged, err)
	}
	return nil
}

// Close closes the state store (moving it aside if it was found damaged
// meanwhile), releases the lock and closes the vault directory.
func (v *Vault) Close() error {
	var errs []error
	if v.store != nil {
		damage := v.store.Damage()
		errs = append(errs, v.store.Close())
		if damage != nil && !v.dry {
			errs = append(errs, v.moveStoreAside(damage))
		}
		v.store = nil
		if !v.dry {
			if err := os.Remove(v.folder.Running()); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("vault: %w", err))
			}
		}
	}
	if v.lock != nil {
		errs = append(errs, v.lock.Release())
		v.lock = nil
	}
	if v.fs != nil {
		errs = append(errs, v.fs.Close())
		v.fs = nil
	}
	return errors.Join(errs...)
}

// agentFor resolves a strand's knot_agent (or the default) to an agent
// and the name reports use.
func (v *Vault) agentFor(name string) (string, agentrun.Agent, error) {
	a, err := v.config().Agent(name)
	if err != nil {
		return "", a, err
	}
	if name == "" {
		name = v.config().DefaultAgent
	}
	return name, a, nil
}

// warnOnce logs a warning about path once per process.
func (v *Vault) warnOnce(path, msg string, args ...any) {
	if _, seen := v.warned.LoadOrStore(path+"\x00"+msg, struct{}{}); seen {
		return
	}
	v.log.Warn(msg, append([]any{"path", path}, args...)...)
}

// noticeOnce calls say unless the notice key was given before, in this
// process or (kept in the state) in an earlier one.
func (v *Vault) noticeOnce(key string, say func()) {
	if v.dry {
		v.warnOnceFunc(key, say)
		return
	}
	var isNew bool
	err := v.store.Update(func(tx *state.Tx) (err error) {
		isNew, err = tx.Notice(key, v.now().UTC())
		return err
	})
	if err != nil {
		v.warnOnceFunc(key, say) // still said, once in this process
		return
	}
	if isNew {
		say()
	}
}

// warnOnceFunc calls say once per process for key.
func (v *Vault) warnOnceFunc(key string, say func()) {
	if _, seen := v.warned.LoadOrStore("notice\x00"+key, struct{}{}); !seen {
		say()
	}
}

// adopter is first contact with a vault knotd has no state for (adopt),
// and the catch-up on what changed while knotd was stopped (catchUp).
type adopter struct {
	v *Vault
}

// Adoption is what first contact with a vault found (see adopt).
type Adoption struct {
	// Adopted counts strands recorded as processed without a run: their
	// tie-off holds no answer knotd can read.
	Adopted int `json:"adopted"`
	// Answered counts strands whose tie-off already answers them.
	Answered int `json:"answered"`
	// Changed counts strands changed since their tie-off's last answer:
	// each gets one run in the pass that follows.
	Changed int `json:"changed"`
	// Unanswered counts, with Options.NoAdopt, the strands whose tie-off
	// holds no answer, left unrecorded: each gets one run (Created) in
	// the pass that follows. Without it they are Adopted.
	Unanswered int `json:"unanswered"`
}

// adopt records what knotd knows of a vault it has no state for: first
// contact, or a state store that was lost, damaged or moved aside. The
// vault is the truth (see the pipeline's runmarker.go), so it reads each
// strand and the newest section of its tie-off:
//
//   - a strand whose tie-off's newest section answers its content is
//     recorded as answered by that run (its session, turn and outcome);
//   - a strand whose tie-off's newest section answered another version of
//     it is recorded with its session but without a content knotd knows,
//     so the next pass runs it once (Modified);
//   - a strand whose tie-off holds no answer knotd can read (none, or
//     sections written before markers recorded hashes) is adopted: recorded
//     as processed, no agent runs, as on first contact with any vault;
//     with Options.NoAdopt it is left unrecorded, so the next pass runs
//     it once (Created).
//
// A strand that is gone leaves nothing to record: a tie-off whose strand
// was deleted since its last answer gets no Deleted run on a device that
// has no state of it, since knotd knows neither the strand's last content
// nor its settings (knot_events may leave deletions out).
func (ad *adopter) adopt() (Adoption, error) {
	v := ad.v
	var a Adoption
	now := v.now().UTC()
	const batch = 1000
	pending := make([]adoptee, 0, batch)
	flush := func() error {
		err := v.store.Update(func(tx *state.Tx) error {
			for _, p := range pending {
				p.rec.Processed = now
				var err error
				if p.kind == adoptedKind {
					err = adoptSession(tx, &p.rec, p.content)
					if err == nil {
						err = tx.Put(p.rec, p.content)
					}
				} else {
					err = putWithSession(tx, p.rec, p.content, p.session)
				}
				for _, q := range p.questions {
					if err == nil {
						err = rebuildQuestion(tx, q)
					}
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		pending = pending[:0]
		if err != nil {
			return fmt.Errorf("vault: adopt: %w", err)
		}
		return nil
	}
	err := ad.survey(func(p adoptee) error {
		a.count(p.kind)
		if p.kind == unansweredKind {
			return nil // unrecorded: the pass runs it
		}
		pending = append(pending, p)
		if len(pending) == batch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err == nil {
		err = v.store.Update(func(tx *state.Tx) error { return tx.SetAdopted(now) })
	}
	return a, err
}

// adoptKind is what first contact found of one strand (see adopt).
type adoptKind uint8

const (
	adoptedKind    adoptKind = iota // no answer in its tie-off: processed as it is
	answeredKind                    // its tie-off answers it
	changedKind                     // changed since its tie-off's last answer
	unansweredKind                  // no answer in its tie-off, and Options.NoAdopt: runs
)

func (a *Adoption) count(k adoptKind) {
	switch k {
	case adoptedKind:
		a.Adopted++
	case answeredKind:
		a.Answered++
	case changedKind:
		a.Changed++
	case unansweredKind:
		a.Unanswered++
	}
}

// adoptee is one strand as first contact records it.
type adoptee struct {
	kind    adoptKind
	rec     state.Record
	content []byte // nil: not kept (changed, or too big)
	session string // from the tie-off's marker
	// questions are the tie-off's questions that wait for an answer.
	questions []state.Question
}

// survey looks at every strand of the vault and its tie-off as adopt
// does, and calls fn with each strand's adoptee, in path order; it writes
// nothing.
func (ad *adopter) survey(fn func(adoptee) error) error {
	v := ad.v
	var paths []string
	tieOffs := map[string]bool{} // the strands whose tie-off is there
	isStrandOrTieOff := func(rel string) bool {
		_, ok := strand.StrandPath(rel)
		return ok || strand.IsStrandPath(rel)
	}
	err := v.recon.WalkWith("", false, isStrandOrTieOff, func(rel string, _ fs.FileInfo) {
		if s, ok := strand.StrandPath(rel); ok {
			tieOffs[s] = true
		} else {
			paths = append(paths, rel)
		}
	})
	if err != nil {
		return err
	}
	slices.Sort(paths) // in key order: bbolt fills its pages best that way
	for _, rel := range paths {
		p, ok := ad.surveyStrand(rel, tieOffs[rel])
		if !ok {
			continue
		}
		if p.kind == adoptedKind && v.noAdopt {
			p.kind = unansweredKind
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

// surveyStrand is survey's look at the strand rel on disk; ok is false
// when it cannot be read (it is said, and processed when it can be).
func (ad *adopter) surveyStrand(rel string, hasTieOff bool) (adoptee, bool) {
	v := ad.v
	content, hash, info, tooBig, err := v.readStrand(rel, v.config().MaxStrandSize)
	if err != nil {
		v.log.Warn("cannot read note; it will be processed when it can", "strand", rel, "err", err)
		return adoptee{}, false
	}
	if tooBig {
		content = nil
	}
	p := adoptee{rec: state.Record{Path: rel, Stamp: reconcile.Stamp(info), Hash: hash, LastOutcome: state.OutcomeAdopted}, content: content}
	if !hasTieOff {
		return p, true
	}
	p.questions = v.openQuestions(rel)
	sec, ok, err := v.pipe.NewestAnswer(rel, nil)
	if err != nil {
		v.log.Warn("cannot read the note's tie-off; adopting the note as it is", "strand", rel, "err", err)
	}
	if !ok || sec.Hash == "" || sec.Event == strand.Deleted {
		return p, true
	}
	p.rec.LastRunID, p.rec.Turns, p.rec.LastOutcome = sec.RunID, 1, outcomeOf(sec)
	p.session = pipeline.MarkerSession(sec)
	if content != nil && sec.Hash == pipeline.MarkerHash(content) {
		p.kind = answeredKind
		return p, true
	}
	// Changed since its last answer: no content knotd knows, so the next
	// pass runs it once.
	p.kind = changedKind
	p.rec.Stamp, p.rec.Hash, p.content = state.Stamp{}, state.Hash{}, nil
	return p, true
}

// outcomeOf is the record outcome of the run whose section sec is.
func outcomeOf(sec tieoff.Section) state.Outcome {
	if sec.Failed {
		return state.OutcomeFailed
	}
	return state.OutcomeSucceeded
}

// putWithSession puts rec with session, unless another strand holds that
// session (the strand is a copy): then without, and its first run gives
// it one of its own.
func putWithSession(tx *state.Tx, rec state.Record, content []byte, session string) error {
	if session != "" {
		if _, taken, err := tx.BySession(session); err != nil {
			return err
		} else if !taken {
			rec.Session = session
		}
	}
	return tx.Put(rec, content)
}

// adoptSession records the session and resume handle an adopted strand
// already has in its frontmatter (knotd ran on it before its state was
// lost, or on another machine), so that a move keeps its history and the
// next run continues its conversation. A session another adopted strand
// took first (a copy) is left out: the copy gets its own on its first run.
func adoptSession(tx *state.Tx, rec *state.Record, content []byte) error {
	if content == nil {
		return nil
	}
	doc, err := frontmatter.Parse(content)
	if err != nil || doc.Fields.Session == "" {
		return nil // no usable session: the first run gives it one
	}
	if _, taken, err := tx.BySession(doc.Fields.Session); err != nil || taken {
		return err
	}
	rec.Session, rec.Resume = doc.Fields.Session, doc.Fields.Resume
	return nil
}

// config returns the configuration in force.
func (v *Vault) config() *config.Config { return v.conf.Load() }

// answerHost is what the answering device asks of the vault: its clock,
// logger and warnings, and the configuration's answering policy, read
// each time.
type answerHost struct{ v *Vault }

func (h answerHost) Now() time.Time    { return h.v.now() }
func (h answerHost) Log() *slog.Logger { return h.v.log }
func (h answerHost) WarnOnce(path, msg string, args ...any) {
	h.v.warnOnce(path, msg, args...)
}
func (h answerHost) Policy() device.Policy {
	return device.Policy{Runner: h.v.config().Runner, TakeoverAfter: h.v.config().TakeoverAfter}
}

// budgetHost is what the day's budget asks of the vault: its clock,
// logger, the budget in force and where the transcripts are, read each
// time (the state folder is known only once open has found it).
type budgetHost struct{ v *Vault }

func (h budgetHost) Now() time.Time        { return h.v.now() }
func (h budgetHost) Log() *slog.Logger     { return h.v.log }
func (h budgetHost) Budget() config.Budget { return h.v.config().Budget }
func (h budgetHost) Runs() string          { return h.v.folder.Runs() }

// runAgent returns what runs the agents: the runner of the configuration
// in force, or the Agent tests gave.
func (v *Vault) runAgent() AgentRunner {
	if v.agent != nil {
		return v.agent
	}
	return v.runner.Load()
}
