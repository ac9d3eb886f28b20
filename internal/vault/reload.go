package vault

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/config"
)

// Reloaded says what a reload of the configuration changed.
type Reloaded struct {
	// Files are the config files read.
	Files []string
	// AtNextStart names the changed settings that take effect only when
	// knotd starts again (the watcher and the scheduler are built with
	// them); every other setting applies from the next run on.
	AtNextStart []string
}

// reloader loads the configuration again when it changed or is asked to
// (Reload), for the vault v.
type reloader struct {
	v *Vault
	// loadOpts is where the configuration was loaded from.
	loadOpts config.LoadOptions
	// confStamps are the config files as last looked at (by the watch
	// loop's goroutine, and Reload on it or on SIGHUP's: see reloads).
	reloadMu   sync.Mutex
	confStamps []configStamp
}

// Reload loads the user's and the vault's configuration again, re-checking
// the trust of the vault's, and says in the log what happened; why is what
// asked for it (SIGHUP, a config file that changed while knotd watches).
// Work queued or running is kept: runs in progress finish with the
// configuration they started with. If the configuration does not load (a
// mistake in a file, an untrusted vault config), the one in force stays,
// and the error says why.
func (v *Vault) Reload(why string) (Reloaded, error) {
	v.reloader.reloadMu.Lock()
	defer v.reloader.reloadMu.Unlock()
	r, err := v.reloader.reload()
	if err != nil {
		v.log.Error("cannot reload the configuration; knotd goes on with the one it had", "why", why, "err", err)
		return r, err
	}
	v.log.Info("configuration reloaded", "why", why, "files", r.Files, "default_agent", v.config().DefaultAgent)
	if len(r.AtNextStart) > 0 {
		v.log.Warn("some changed settings take effect only when knotd starts again", "settings", r.AtNextStart)
	}
	return r, nil
}

// reload is Reload, without the log; v.reloader.reloadMu is held.
func (rl *reloader) reload() (Reloaded, error) {
	v := rl.v
	rl.confStamps = rl.configStamps() // a file that does not load is not tried again until it changes
	old := v.config()
	cfg, err := config.Load(rl.loadOpts)
	if err == nil {
		_, err = cfg.Agent("")
	}
	if err != nil {
		return Reloaded{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	var r Reloaded
	r.Files = cfg.Files
	for _, c := range []struct {
		name string
		same bool
	}{
		{"debounce", old.Debounce == cfg.Debounce},
		{"max_wait", old.MaxWait == cfg.MaxWait},
		{"concurrency", old.Concurrency == cfg.Concurrency},
		{"poll", old.Poll == cfg.Poll},
		{"ignore", slices.Equal(old.Ignore, cfg.Ignore)},
		{"obsidian_dir", old.ObsidianDir == cfg.ObsidianDir},
		{"notify", sameNotify(old.Notify, cfg.Notify)},
	} {
		if !c.same {
			r.AtNextStart = append(r.AtNextStart, c.name)
		}
	}
	if len(r.AtNextStart) > 0 {
		// They keep their running values until the restart, so that what
		// the daemon says and what it does agree.
		cfg.Debounce, cfg.MaxWait, cfg.Concurrency, cfg.Poll = old.Debounce, old.MaxWait, old.Concurrency, old.Poll
		cfg.Ignore, cfg.ObsidianDir, cfg.Notify = old.Ignore, old.ObsidianDir, old.Notify
	}
	for _, c := range cfg.Clamped {
		v.log.Warn("the vault config asks knotd to do more than your own configuration says, and yours applies: a vault config may make knotd do less, never more (knotd trust lets it)",
			"file", config.VaultConfigPath(v.root), "value", c)
	}
	v.runner.Store(&agentrun.Runner{Limits: cfg.Limits, Now: v.now, Groups: agentGroups{v}})
	v.conf.Store(cfg)
	v.loadObsidianFilters()
	return r, nil
}

// sameNotify reports whether a and b notify the same way (the notifier
// is built with them when knotd starts).
func sameNotify(a, b config.Notify) bool {
	return a.Desktop == b.Desktop && slices.Equal(a.Command, b.Command) && a.URL == b.URL && a.TokenEnv == b.TokenEnv
}

// reloadIfChanged reloads the configuration if a config file changed
// since it was loaded (or last looked at).
func (rl *reloader) reloadIfChanged() {
	v := rl.v
	rl.reloadMu.Lock()
	changed := rl.configChanged()
	rl.reloadMu.Unlock()
	if changed {
		_, _ = v.Reload("a config file changed") // an error is logged; the configuration in force stays
	}
}

// configStamp is what tells that a config file changed: its size, time
// and identity (a file replaced by a rename is a change), or its absence.
type configStamp struct {
	exists  bool
	size    int64
	modTime time.Time
	info    os.FileInfo
}

// configPaths are the files a change of which changes the configuration:
// the user's config file, the vault's, and Obsidian's settings (its
// Excluded files).
func (rl *reloader) configPaths() []string {
	v := rl.v
	user := rl.loadOpts.UserFile
	if user == "" {
		dir := rl.loadOpts.ConfigDir
		if dir == "" {
			var err error
			if dir, err = config.UserConfigDir(); err != nil {
				return []string{config.VaultConfigPath(v.root), filepath.Join(v.root, v.config().ObsidianDir, "app.json")}
			}
		}
		user = filepath.Join(dir, config.ConfigFile)
	}
	return []string{user, config.VaultConfigPath(v.root), filepath.Join(v.root, v.config().ObsidianDir, "app.json")}
}

// configStamps stats the config files.
func (rl *reloader) configStamps() []configStamp {
	paths := rl.configPaths()
	out := make([]configStamp, len(paths))
	for i, p := range paths {
		fi, err := os.Stat(p)
		switch {
		case err == nil:
			out[i] = configStamp{exists: true, size: fi.Size(), modTime: fi.ModTime(), info: fi}
		case !errors.Is(err, fs.ErrNotExist):
			// Unreadable: compared as it is; a change shows when it
			// can be read again.
			out[i] = configStamp{exists: true, size: -1}
		}
	}
	return out
}

// configChanged reports whether a config file changed since the
// configuration in force was loaded (or last looked at); rl.reloadMu is
// held.
func (rl *reloader) configChanged() bool {
	now := rl.configStamps()
	if rl.confStamps == nil {
		rl.confStamps = now
		return false
	}
	changed := false
	for i, s := range now {
		o := rl.confStamps[i]
		same := s.exists == o.exists && s.size == o.size && s.modTime.Equal(o.modTime) &&
			(s.info == nil || o.info == nil || os.SameFile(s.info, o.info))
		changed = changed || !same
	}
	rl.confStamps = now
	return changed
}
