package config

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const vaultAgents = `default_agent: shared
agents:
  shared:
    command: [shared-tool, --reply]
`

func TestLoad_UntrustedVaultCommandRefused(t *testing.T) {
	e := newConfigEnv(t)
	e.writeVault(t, vaultAgents)
	_, err := e.load(Settings{})
	var ue *untrustedError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUntrusted) {
		t.Fatalf("Load = %v; want an *untrustedError", err)
	}
	for _, want := range []string{VaultConfigPath(e.vault), "shared", "is not trusted", "knotd trust " + e.vault} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Load = %q; want it to mention %q", err, want)
		}
	}
}

func TestLoad_TrustedVaultLoads(t *testing.T) {
	e := newConfigEnv(t)
	e.writeVault(t, vaultAgents)
	tr, err := Trust(e.dir, e.vault)
	if err != nil {
		t.Fatalf("Trust = %v", err)
	}
	if tr.File != VaultConfigPath(e.vault) || tr.SHA256 != fmt.Sprintf("%x", sha256.Sum256([]byte(vaultAgents))) || len(tr.Agents) != 1 || tr.Agents[0] != "shared" {
		t.Errorf("Trust = %+v; want the file, its hash and [shared]", tr)
	}
	c := e.mustLoad(t, Settings{})
	if a, err := c.Agent(""); err != nil || a.Name != "shared" || a.Command[0] != "shared-tool" {
		t.Errorf("Agent(\"\") = %+v, %v; want the vault's shared agent", a, err)
	}
}

func TestLoad_EditUntrusts(t *testing.T) {
	e := newConfigEnv(t)
	e.writeVault(t, vaultAgents)
	if _, err := Trust(e.dir, e.vault); err != nil {
		t.Fatal(err)
	}
	e.writeVault(t, strings.Replace(vaultAgents, "--reply", "--rm-rf", 1))
	_, err := e.load(Settings{})
	var ue *untrustedError
	if !errors.As(err, &ue) || !ue.Changed || !strings.Contains(err.Error(), "changed since you trusted it") {
		t.Fatalf("Load after an edit = %v; want an *untrustedError saying the file changed", err)
	}
	// Even a comment counts: trust is for the exact bytes.
	e.writeVault(t, vaultAgents+"# harmless?\n")
	if _, err := e.load(Settings{}); !errors.Is(err, ErrUntrusted) {
		t.Errorf("Load after adding a comment = %v; want ErrUntrusted", err)
	}
	// Restoring the trusted bytes restores trust.
	e.writeVault(t, vaultAgents)
	e.mustLoad(t, Settings{})
}

// TestLoad_TrustedVaultMayNamePreset: once trusted, the vault file counts
// as the user's own and may name a preset without defining it.
func TestLoad_TrustedVaultMayNamePreset(t *testing.T) {
	e := newConfigEnv(t)
	e.writeVault(t, "default_agent: claude\n")
	if _, err := e.load(Settings{}); err == nil {
		t.Fatal("untrusted vault naming an unconfigured preset loaded; want an error")
	}
	if _, err := Trust(e.dir, e.vault); err != nil {
		t.Fatal(err)
	}
	if c := e.mustLoad(t, Settings{}); c.Agents["claude"].Preset != "claude" {
		t.Errorf("Agents[claude] = %+v; want the claude preset", c.Agents["claude"])
	}
}

func TestTrust_File(t *testing.T) {
	e := newConfigEnv(t)
	e.writeVault(t, vaultAgents)
	other := newConfigEnv(t)
	other.writeVault(t, "debounce: 1s\n")
	for _, v := range []string{other.vault, e.vault} {
		if _, err := Trust(e.dir, v); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(e.dir, trustFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("mode of %s = %v; want 0600", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{e.vault, other.vault} {
		key, _ := vaultKey(v)
		if !strings.Contains(string(b), key+":") {
			t.Errorf("%s = %q; want a record for %s", trustFile, b, key)
		}
	}
	if ok, err := isTrusted(e.dir, e.vault, []byte(vaultAgents)); !ok || err != nil {
		t.Errorf("isTrusted(trusted bytes) = %v, %v; want true", ok, err)
	}
	if ok, _ := isTrusted(e.dir, e.vault, []byte(vaultAgents+"\n")); ok {
		t.Error("isTrusted(other bytes) = true; want false")
	}
	if err := untrust(e.dir, e.vault); err != nil {
		t.Fatal(err)
	}
	if ok, _ := isTrusted(e.dir, e.vault, []byte(vaultAgents)); ok {
		t.Error("isTrusted after untrust = true; want false")
	}
	if ok, _ := isTrusted(e.dir, other.vault, []byte("debounce: 1s\n")); !ok {
		t.Error("untrust of one vault dropped another's record")
	}
}

func TestTrust_SymlinkedVault(t *testing.T) {
	e := newConfigEnv(t)
	e.writeVault(t, vaultAgents)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(e.vault, link); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	if _, err := Trust(e.dir, link); err != nil {
		t.Fatal(err)
	}
	if ok, err := isTrusted(e.dir, e.vault, []byte(vaultAgents)); !ok || err != nil {
		t.Errorf("isTrusted(real path) after Trust(symlink) = %v, %v; want true", ok, err)
	}
}

func TestTrust_Refuses(t *testing.T) {
	e := newConfigEnv(t)
	if _, err := Trust(e.dir, e.vault); err == nil || !strings.Contains(err.Error(), "no vault config file") {
		t.Errorf("Trust(no config file) = %v; want an error saying there is nothing to trust", err)
	}
	e.writeVault(t, "agents:\n  a:\n    comand: [x]\n")
	if _, err := Trust(e.dir, e.vault); err == nil || !strings.Contains(err.Error(), "comand") {
		t.Errorf("Trust(invalid file) = %v; want the parse error", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, trustFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused Trust wrote %s (stat: %v)", trustFile, err)
	}
}

func TestTrust_DamagedRecords(t *testing.T) {
	e := newConfigEnv(t)
	e.writeVault(t, vaultAgents)
	writeFile(t, filepath.Join(e.dir, trustFile), "vaults: [not, a, map]\n")
	_, err := e.load(Settings{})
	if err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("Load with damaged trust records = %v; want an error saying so", err)
	}
}
