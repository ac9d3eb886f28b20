package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/knotd/knotd/internal/vaultfs"

	"gopkg.in/yaml.v3"
)

// trustFile is the file, in knotd's user config directory, that records
// which vault config files the user trusted (`knotd trust VAULT`). It is
// knotd's own (mode 0600, replaced atomically) and looks like:
//
//	vaults:
//	  /home/ada/notes:
//	    sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
//	    trusted: 2026-11-21T19:30:05Z
//
// Keys are vault roots as absolute paths with symlinks resolved; sha256 is
// the hash of the vault config file's exact bytes when it was trusted. Any
// change to the file, even a comment, makes it untrusted again.
const trustFile = "trusted.yaml"

type trustEntry struct {
	SHA256  string    `yaml:"sha256"`
	Trusted time.Time `yaml:"trusted"`
}

type trustDoc struct {
	Vaults map[string]trustEntry `yaml:"vaults"`
}

// Trusted describes a vault config file that Trust recorded.
type Trusted struct {
	File   string   // the vault config file
	SHA256 string   // the SHA-256 of its content, in lower-case hex
	Agents []string // the agents it defines, sorted
}

// Trust records that the user trusts the current content of the vault
// config file of the vault at root, so that Load accepts the agents it
// defines. dir is knotd's user config directory (UserConfigDir). A file
// that does not parse is not trusted. Two Trust calls running at the same
// time may lose one of the records (the last write wins).
func Trust(dir, root string) (Trusted, error) {
	key, err := vaultKey(root)
	if err != nil {
		return Trusted{}, err
	}
	file := VaultConfigPath(root)
	var c Config
	l, err := c.readVaultLayer(root)
	if err != nil {
		return Trusted{}, fmt.Errorf("trust %s: %w", root, err)
	}
	if l.data == nil {
		return Trusted{}, fmt.Errorf("trust %s: there is no vault config file %s to trust", root, file)
	}
	data := l.data
	s, err := parseSettings(file, data)
	if err != nil {
		return Trusted{}, fmt.Errorf("trust %s: fix the file first: %w", root, err)
	}
	doc, err := readTrust(dir)
	if err != nil {
		return Trusted{}, err
	}
	h := sha256Hex(data)
	doc.Vaults[key] = trustEntry{SHA256: h, Trusted: time.Now().UTC().Truncate(time.Second)}
	if err := writeTrust(dir, doc); err != nil {
		return Trusted{}, err
	}
	return Trusted{File: file, SHA256: h, Agents: slices.Sorted(maps.Keys(s.Agents))}, nil
}

// sha256Hex returns the SHA-256 of b in lower-case hex, as the trust
// file records it.
func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// untrust removes the trust record of the vault at root, if any.
func untrust(dir, root string) error {
	key, err := vaultKey(root)
	if err != nil {
		return err
	}
	doc, err := readTrust(dir)
	if err != nil {
		return err
	}
	if _, ok := doc.Vaults[key]; !ok {
		return nil
	}
	delete(doc.Vaults, key)
	return writeTrust(dir, doc)
}

// isTrusted reports whether content is exactly the vault config content
// the user trusted for the vault at root.
func isTrusted(dir, root string, content []byte) (bool, error) {
	e, ok, err := trustRecord(dir, root)
	return ok && e.SHA256 == sha256Hex(content), err
}

// trustRecord returns the trust record of the vault at root.
func trustRecord(dir, root string) (trustEntry, bool, error) {
	key, err := vaultKey(root)
	if err != nil {
		return trustEntry{}, false, err
	}
	doc, err := readTrust(dir)
	if err != nil {
		return trustEntry{}, false, err
	}
	e, ok := doc.Vaults[key]
	return e, ok, nil
}

// vaultKey returns root as an absolute path with symlinks resolved, so
// that one vault has one record however it is named.
func vaultKey(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", fmt.Errorf("resolve the vault path: %w", err)
	}
	return abs, nil
}

func readTrust(dir string) (trustDoc, error) {
	path := filepath.Join(dir, trustFile)
	doc := trustDoc{Vaults: map[string]trustEntry{}}
	data, err := readBounded(path)
	if errors.Is(err, fs.ErrNotExist) {
		return doc, nil
	}
	if err != nil {
		return doc, fmt.Errorf("read trust records: %w", err)
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return doc, fmt.Errorf("trust records %s are damaged (delete the file and trust your vaults again): %w", path, err)
	}
	if doc.Vaults == nil {
		doc.Vaults = map[string]trustEntry{}
	}
	return doc, nil
}

func writeTrust(dir string, doc trustDoc) error {
	data, err := yaml.Marshal(&doc)
	if err != nil {
		return fmt.Errorf("write trust records: %w", err)
	}
	header := []byte("# Vault config files you trusted with `knotd trust`, by content hash.\n")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write trust records: %w", err)
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("write trust records: %w", err)
	}
	defer r.Close()
	if err := vaultfs.Replace(r, trustFile, append(header, data...), vaultfs.ReplaceOptions{Perm: 0o600}); err != nil {
		return fmt.Errorf("write trust records: %w", err)
	}
	return nil
}
