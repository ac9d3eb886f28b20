package vault

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/knotd/knotd/agentrun"
	"github.com/knotd/knotd/frontmatter"
	"github.com/knotd/knotd/strand"
	"github.com/knotd/knotd/watcher"
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
	// means UserConfigDir()).
	ConfigDir string
	// ConfigFile is the user config file given with --config.
	ConfigFile string
	// Flags holds the settings given on the command line; they win over
	// both config files. Agent is --agent.
	Flags Settings
	// Agent runs the agents; nil means an agentrun.Runner with the
	// configured limits. Tests substitute their own.
	Agent Agent
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Grace is how long running agents may finish after knotd is told to
	// stop before they are killed (default 10s).
	Grace time.Duration
}

// Vault is one open vault: its lock, state, configuration and agent. Open
// it, call Once or Watch, then Close it.
type Vault struct {
	root   string
	cfg    *Config
	store  *Store
	lock   *Lock
	rules  *watcher.Rules
	agent  Agent
	runner *agentrun.Runner // for prompts (--dry-run); nil when Agent was given
	log    *slog.Logger
	now    func() time.Time
	grace  time.Duration
	dry    bool

	warned sync.Map // "path\x00message" → struct{}: warnings given once

	claims claims // strand paths being worked on

	// hooks lets tests observe the daemon (see hooks).
	hooks hooks
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
func open(root string, opts Options, dry bool) (v *Vault, err error) {
	v, err = newVault(root, opts)
	if err != nil {
		return nil, err
	}
	v.dry = dry
	if v.lock, err = AcquireLock(root); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = v.Close() // the open error is the one to report
		}
	}()
	if v.store, err = OpenStore(filepath.Join(root, strand.StateDir, StateFile)); err != nil {
		return nil, err
	}
	if !dry {
		if err := v.recover(); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// newVault loads the configuration and builds a Vault without touching the
// state directory.
func newVault(root string, opts Options) (*Vault, error) {
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
	cfg, err := Load(LoadOptions{Vault: root, ConfigDir: opts.ConfigDir, UserFile: opts.ConfigFile, Flags: opts.Flags})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if _, err := cfg.Agent(""); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	v := &Vault{
		root:  root,
		cfg:   cfg,
		rules: &watcher.Rules{ConfigDir: cfg.ObsidianDir, Patterns: cfg.Ignore},
		agent: opts.Agent,
		log:   opts.Logger,
		now:   opts.Now,
		grace: opts.Grace,
	}
	if v.log == nil {
		v.log = slog.New(slog.DiscardHandler)
	}
	if v.now == nil {
		v.now = time.Now
	}
	if v.grace <= 0 {
		v.grace = 10 * time.Second
	}
	if v.agent == nil {
		v.runner = &agentrun.Runner{Limits: cfg.Limits, Now: v.now}
		v.agent = v.runner
	}
	return v, nil
}

// Root returns the vault's root directory.
func (v *Vault) Root() string { return v.root }

// Close closes the state store and releases the lock.
func (v *Vault) Close() error {
	var errs []error
	if v.store != nil {
		errs = append(errs, v.store.Close())
		v.store = nil
	}
	if v.lock != nil {
		errs = append(errs, v.lock.Release())
		v.lock = nil
	}
	return errors.Join(errs...)
}

// recover finishes the runs a crash (or a tie-off that could not be
// written) left journaled: each reply is appended to its tie-off unless it
// is already there, then the run is committed. A run that still cannot be
// finished is reported and stays journaled for the next start; it does
// not keep knotd from serving the rest of the vault.
func (v *Vault) recover() error {
	ps, err := v.store.Pendings()
	if err != nil {
		return err
	}
	for _, p := range ps {
		j, err := decodeJournal(p.Section)
		if err == nil {
			err = v.complete(p, j, true)
		}
		if err != nil {
			v.log.Error("cannot finish a run journaled before knotd stopped; it stays journaled and is retried at the next start",
				"strand", p.Record.Path, "run", p.RunID, "err", err)
			continue
		}
		v.log.Info("finished a run journaled before knotd stopped", "strand", p.Record.Path, "run", p.RunID)
	}
	return nil
}

// agentFor resolves a strand's knot_agent (or the default) to an agent
// and the name reports use.
func (v *Vault) agentFor(name string) (string, agentrun.Agent, error) {
	a, err := v.cfg.Agent(name)
	if err != nil {
		return "", a, err
	}
	if name == "" {
		name = v.cfg.DefaultAgent
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

// adopt records every strand on disk as processed without running it: what
// knotd does on first contact with a vault. It returns how many strands it
// adopted.
func (v *Vault) adopt() (int, error) {
	var paths []string
	if err := v.walk("", false, func(rel string, _ fs.FileInfo) { paths = append(paths, rel) }); err != nil {
		return 0, err
	}
	slices.Sort(paths) // in key order: bbolt fills its pages best that way
	const batch = 1000
	n := 0
	now := v.now().UTC()
	for start := 0; start < len(paths); start += batch {
		end := min(start+batch, len(paths))
		err := v.store.Update(func(tx *Tx) error {
			for _, rel := range paths[start:end] {
				abs, err := strand.Abs(v.root, rel)
				if err != nil {
					return err
				}
				content, hash, info, tooBig, err := readStrand(abs, v.cfg.MaxStrandSize)
				if err != nil {
					v.log.Warn("cannot read strand; it will be processed when it can", "strand", rel, "err", err)
					continue
				}
				if tooBig {
					content = nil
				}
				rec := Record{Path: rel, Stamp: v.stamp(info), Hash: hash, LastOutcome: OutcomeAdopted, Processed: now}
				if err := adoptSession(tx, &rec, content); err != nil {
					return err
				}
				if err := tx.Put(rec, content); err != nil {
					return err
				}
				n++
			}
			return nil
		})
		if err != nil {
			return n, fmt.Errorf("vault: adopt: %w", err)
		}
	}
	err := v.store.Update(func(tx *Tx) error { return tx.SetAdopted(now) })
	return n, err
}

// adoptSession records the session and resume handle an adopted strand
// already has in its frontmatter (knotd ran on it before its state was
// lost, or on another machine), so that a move keeps its history and the
// next run continues its conversation. A session another adopted strand
// took first (a copy) is left out: the copy gets its own on its first run.
func adoptSession(tx *Tx, rec *Record, content []byte) error {
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
