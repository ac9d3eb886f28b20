package vault

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/ignore"
	"github.com/knotd/knotd/internal/strand"
)

// ExplainPath says whether knotd ignores the vault-relative path rel and
// why (knotd --explain-ignore): the built-in ignores, the ignore files and
// the configured patterns, and whether the name is a strand at all.
func ExplainPath(root string, opts Options, rel string) (string, error) {
	rel = strings.TrimSuffix(rel, "/")
	if rel == "" || rel == "." {
		return "the vault root is never ignored", nil
	}
	if err := strand.ValidateRel(rel); err != nil {
		return "", err
	}
	cfg, err := config.Load(config.LoadOptions{Vault: root, ConfigDir: opts.ConfigDir, UserFile: opts.ConfigFile, Flags: opts.Flags})
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrConfig, err)
	}
	rules := &ignore.Rules{ConfigDir: cfg.ObsidianDir, Patterns: cfg.Ignore}
	if err := rules.Load(root, rel); err != nil {
		return "", err
	}
	query := rel
	fi, statErr := os.Lstat(filepath.Join(root, filepath.FromSlash(rel)))
	isDir := statErr == nil && fi.IsDir()
	if isDir {
		query += "/"
	}
	ignored, reason := rules.Explain(query)
	msg := rel + ": " + reason
	if inner := nestedVaultOf(root, rel); inner != "" && inner != rel && !ignored {
		return rel + ": inside " + inner + ", a folder with a .knot of its own: a vault of its own, which its own knotd answers; this vault's knotd leaves it alone", nil
	}
	switch {
	case ignored || isDir:
	case strand.IsTieOff(rel):
		msg += "; it is a tie-off (knotd's output), never a note"
	case !strand.IsStrandPath(rel):
		msg += "; but it is not a note: knotd only processes .md notes (not editor or sync temp files, not tie-offs, not under .knot)"
	case statErr == nil && !fi.Mode().IsRegular():
		msg += "; but it is not a regular file, so knotd leaves it alone"
	default:
		msg += "; it is a note"
	}
	return msg, nil
}

// nestedVaultOf returns the first folder on the way from the vault root to
// rel (rel itself included when it is a folder) that has a .knot of its
// own, or "".
func nestedVaultOf(root, rel string) string {
	for i := 1; i <= len(rel); i++ {
		if i < len(rel) && rel[i] != '/' {
			continue
		}
		dir := rel[:i]
		if fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(dir), ignore.VaultMarker)); err == nil && fi.IsDir() {
			return dir
		}
	}
	return ""
}
