package vault

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/knotd/knotd/internal/agentrun"
	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/vaultfs"
)

// scopeOf is what the configuration's rules, and Obsidian's own "Excluded
// files" setting, say of the strand at rel.
func (v *Vault) scopeOf(rel string) config.Scope {
	sc := v.config().ScopeOf(rel)
	if !sc.Off {
		if f := v.obsidianExcluded(rel); f != "" {
			sc.Off, sc.Why = true, fmt.Sprintf("Obsidian's Excluded files (%q) lists it", f)
		}
	}
	return sc
}

// scopedAgent resolves the agent a strand names (name, "" for none)
// within what the rules allow: a note that names none gets the rules'
// agent, else the default agent, else the first the rules allow; a note
// that names one outside them cannot run.
func (v *Vault) scopedAgent(name string, sc config.Scope) (string, agentrun.Agent, error) {
	if name == "" {
		name = sc.Agent
	}
	if sc.Agents != nil {
		if name == "" {
			name = v.config().DefaultAgent
			if !slices.Contains(sc.Agents, name) && len(sc.Agents) > 0 {
				name = sc.Agents[0]
			}
		}
		if !slices.Contains(sc.Agents, name) {
			return "", agentrun.Agent{}, fmt.Errorf("vault: the rules of your configuration allow only %s for this note's path, not %q, so no agent was run (choose one of them with knot_agent)",
				orNone(strings.Join(sc.Agents, ", ")), name)
		}
	}
	return v.agentFor(name)
}

func orNone(s string) string {
	if s == "" {
		return "no agent"
	}
	return s
}

// maxObsidianApp bounds the read of Obsidian's app.json.
const maxObsidianApp = 1 << 20

// obsidianFilters is Obsidian's "Excluded files" setting, as read from
// <obsidian_dir>/app.json's userIgnoreFilters: a path (a note or a folder,
// matched as the beginning of a note's path, as Obsidian does) or a
// regular expression between slashes.
type obsidianFilters struct {
	prefixes []string
	regexps  []*regexp.Regexp
	texts    []string // the regexps as written
}

// loadObsidianFilters reads the Excluded files setting; a vault without
// one has none. A filter knotd cannot use (a JavaScript-only regular
// expression) is said once and left out.
func (v *Vault) loadObsidianFilters() {
	name := path.Join(v.config().ObsidianDir, "app.json")
	data, _, err := vaultfs.ReadFile(v.fs, name, maxObsidianApp)
	var f obsidianFilters
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		v.warnOnce(name, "cannot read Obsidian's settings; its Excluded files are not honoured", "err", err)
	default:
		var app struct {
			UserIgnoreFilters []string `json:"userIgnoreFilters"`
		}
		if err := json.Unmarshal(data, &app); err != nil {
			v.warnOnce(name, "cannot read Obsidian's settings; its Excluded files are not honoured", "err", err)
			break
		}
		for _, flt := range app.UserIgnoreFilters {
			if len(flt) > 2 && strings.HasPrefix(flt, "/") && strings.HasSuffix(flt, "/") {
				re, err := regexp.Compile(flt[1 : len(flt)-1])
				if err != nil {
					v.warnOnce(name+"\x00"+flt, "an Excluded files filter of Obsidian's is a regular expression knotd cannot read; notes it excludes are sent to agents", "filter", flt, "err", err)
					continue
				}
				f.regexps, f.texts = append(f.regexps, re), append(f.texts, flt)
			} else if flt = strings.TrimPrefix(flt, "/"); flt != "" {
				f.prefixes = append(f.prefixes, flt)
			}
		}
	}
	v.obsidian.Store(&f)
}

// obsidianExcluded returns the Excluded files filter that matches rel,
// "" when none does.
func (v *Vault) obsidianExcluded(rel string) string {
	f := v.obsidian.Load()
	if f == nil {
		return ""
	}
	for _, p := range f.prefixes {
		if strings.HasPrefix(rel, p) {
			return p
		}
	}
	for i, re := range f.regexps {
		if re.MatchString(rel) {
			return f.texts[i]
		}
	}
	return ""
}
