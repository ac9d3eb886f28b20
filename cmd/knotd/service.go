package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/template"
)

const serviceUsage = `usage: knotd service install [--dry-run] [--no-start] [VAULT]
       knotd service uninstall [--dry-run] [VAULT]

'knotd service install' makes knotd watch VAULT (default: the current
directory) as a service of your user, started at login and restarted should
it fail:

  Linux   a systemd user unit, $XDG_CONFIG_HOME/systemd/user/knotd-NAME.service
          (~/.config/systemd/user), then: systemctl --user daemon-reload and
          systemctl --user enable --now knotd-NAME.service
  macOS   a launchd agent, ~/Library/LaunchAgents/dev.knotd.NAME.plist, then:
          launchctl bootstrap gui/UID PLIST

NAME is the vault folder's name and a short hash of its absolute path, so
that each vault has its own service. The service runs this knotd executable
with the vault's absolute path, and a PATH that holds your current PATH and
where npm, pip and Homebrew put agent CLIs (~/.npm-global/bin, ~/.local/bin,
/opt/homebrew/bin, /usr/local/bin), so that agents found in your shell are
found by the service too. Installing again rewrites the service.

'knotd service uninstall' stops and disables the vault's service and
removes its file.

Flags:
`

// serviceOptions are the flags of knotd service.
type serviceOptions struct {
	dryRun, noStart bool
}

// runService is knotd service install|uninstall.
func runService(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o serviceOptions
	fs := flag.NewFlagSet("knotd service", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.BoolVar(&o.dryRun, "dry-run", false, "print the service file and the commands; write and run nothing")
	fs.BoolVar(&o.noStart, "no-start", false, "install: write and enable the service, but do not start it now")
	pos, help, err := parseCommand(fs, "service", serviceUsage, args, stdout)
	if help || err != nil {
		return err
	}
	if len(pos) == 0 || (pos[0] != "install" && pos[0] != "uninstall") {
		return usageError{"knotd service: say install or uninstall (see knotd service --help)"}
	}
	arg, err := vaultArg("service "+pos[0], pos[1:])
	if err != nil {
		return err
	}
	if pos[0] == "uninstall" && o.noStart {
		return usageError{"knotd service uninstall: --no-start goes with install (see knotd service --help)"}
	}
	root, err := vaultRoot(arg, nil)
	if err != nil {
		return err
	}
	if strings.ContainsAny(root, "\n\r") {
		return fmt.Errorf("knotd service: the vault's path %q holds a line break, which a service file cannot hold; rename the folder", root)
	}
	sm, err := serviceManagerFor(runtime.GOOS)
	if err != nil {
		return err
	}
	svc, err := newService(root)
	if err != nil {
		return err
	}
	if pos[0] == "install" {
		return sm.install(ctx, svc, o, stdout, stderr)
	}
	return sm.uninstall(ctx, svc, o, stdout)
}

// service is what a vault's service runs.
type service struct {
	Vault string // the vault's absolute path
	Exe   string // knotd's own executable, absolute, links resolved
	Path  string // the service's PATH
	Home  string
	Slug  string // the vault's name and a hash of its path: notes-1a2b3c4d
}

func newService(root string) (service, error) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return service{}, fmt.Errorf("knotd service: find knotd's own executable: %w", err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return service{}, fmt.Errorf("knotd service: find your home directory: %w", err)
	}
	sum := sha256.Sum256([]byte(root))
	return service{
		Vault: root,
		Exe:   exe,
		Path:  servicePath(os.Getenv("PATH"), home, filepath.Dir(exe)),
		Home:  home,
		Slug:  slug(filepath.Base(root)) + "-" + hex.EncodeToString(sum[:4]),
	}, nil
}

// servicePath is the service's PATH: the entries of the current one
// (absolute ones only, in their order), then knotd's own folder and the
// folders where npm, pip and Homebrew put agent CLIs, then the system's.
func servicePath(current, home, exeDir string) string {
	var dirs []string
	add := func(d string) {
		if filepath.IsAbs(d) && !slices.Contains(dirs, d) {
			dirs = append(dirs, filepath.Clean(d))
		}
	}
	for _, d := range filepath.SplitList(current) {
		add(d)
	}
	add(exeDir)
	for _, d := range []string{
		filepath.Join(home, ".npm-global", "bin"),
		filepath.Join(home, ".local", "bin"),
		filepath.Join(home, "go", "bin"),
		"/opt/homebrew/bin",
		"/usr/local/bin",
		"/usr/bin",
		"/bin",
	} {
		add(d)
	}
	return strings.Join(dirs, string(filepath.ListSeparator))
}

// slug turns a folder's name into letters, digits, '.', '_' and '-', for
// a unit's name and a launchd label.
func slug(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r == '.' && b.Len() > 0:
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if len(s) > 40 {
		s = s[:40]
	}
	if s == "" {
		s = "vault"
	}
	return s
}

// serviceManager installs and uninstalls a service on one platform.
type serviceManager interface {
	install(ctx context.Context, s service, o serviceOptions, stdout, stderr io.Writer) error
	uninstall(ctx context.Context, s service, o serviceOptions, stdout io.Writer) error
}

func serviceManagerFor(goos string) (serviceManager, error) {
	switch goos {
	case "linux":
		return systemdUser{}, nil
	case "darwin":
		return launchdAgent{}, nil
	}
	return nil, fmt.Errorf("knotd service: not supported on %s: start 'knotd VAULT' from your system's own service manager (on Windows, Task Scheduler, at log on)", goos)
}

// systemdUser installs a systemd user unit.
type systemdUser struct{}

var systemdUnit = template.Must(template.New("unit").Funcs(template.FuncMap{"q": systemdQuote, "qenv": systemdEnvQuote, "pct": func(s string) string { return strings.ReplaceAll(s, "%", "%%") }}).Parse(`# Written by 'knotd service install'; 'knotd service uninstall' removes it.
[Unit]
Description=knotd watching {{pct .Vault}}
Documentation=https://github.com/knotd/knotd/blob/main/docs/operating.md#running-it-as-a-service

[Service]
ExecStart={{q .Exe}} {{q .Vault}}
Environment={{qenv (print "PATH=" .Path)}}
ExecReload=/bin/kill -HUP $MAINPID
Restart=on-failure
KillSignal=SIGTERM
TimeoutStopSec=30

[Install]
WantedBy=default.target
`))

// systemdQuote quotes s for a unit file's ExecStart= or Environment=: in
// double quotes, with backslashes and quotes escaped, and % and $ doubled
// so that systemd expands no specifier or variable in it.
func systemdQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "%", "%%", "$", "$$", "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// systemdEnvQuote quotes s for Environment=, where systemd expands
// specifiers (%) but no variables ($).
func systemdEnvQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "%", "%%", "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

func (systemdUser) unit(s service) string { return "knotd-" + s.Slug + ".service" }

func (m systemdUser) file(s service) (string, error) {
	base := os.Getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(base) {
		base = filepath.Join(s.Home, ".config")
	}
	return filepath.Join(base, "systemd", "user", m.unit(s)), nil
}

func (m systemdUser) install(ctx context.Context, s service, o serviceOptions, stdout, stderr io.Writer) error {
	var text bytes.Buffer
	if err := systemdUnit.Execute(&text, s); err != nil {
		return fmt.Errorf("knotd service: %w", err)
	}
	path, err := m.file(s)
	if err != nil {
		return err
	}
	unit := m.unit(s)
	enable := []string{"--user", "enable", "--now", unit}
	if o.noStart {
		enable = []string{"--user", "enable", unit}
	}
	cmds := [][]string{{"systemctl", "--user", "daemon-reload"}, append([]string{"systemctl"}, enable...)}
	if o.dryRun {
		fmt.Fprintf(stdout, "# %s\n%s\n", path, text.String())
		for _, c := range cmds {
			fmt.Fprintf(stdout, "would run: %s\n", strings.Join(c, " "))
		}
		return nil
	}
	warnTemporary(s, stderr)
	if err := writeServiceFile(path, text.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", path)
	for _, c := range cmds {
		if err := runTool(ctx, c, stdout); err != nil {
			return err
		}
	}
	if o.noStart {
		fmt.Fprintf(stdout, "the user service %s starts at your next login (or now: systemctl --user start %s)\n", unit, unit)
	} else {
		fmt.Fprintf(stdout, "knotd now watches %s as the user service %s\n", s.Vault, unit)
	}
	fmt.Fprintf(stdout, "logs: journalctl --user -u %s -f\nto keep it running while you are logged out: loginctl enable-linger\n", unit)
	return nil
}

func (m systemdUser) uninstall(ctx context.Context, s service, o serviceOptions, stdout io.Writer) error {
	path, err := m.file(s)
	if err != nil {
		return err
	}
	unit := m.unit(s)
	cmds := [][]string{{"systemctl", "--user", "disable", "--now", unit}, {"systemctl", "--user", "daemon-reload"}}
	if o.dryRun {
		fmt.Fprintf(stdout, "would run: %s\nwould remove %s\nwould run: %s\n", strings.Join(cmds[0], " "), path, strings.Join(cmds[1], " "))
		return nil
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("knotd service uninstall: no service for the vault %s (there is no %s)", s.Vault, path)
	}
	if err := runTool(ctx, cmds[0], stdout); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("knotd service uninstall: %w", err)
	}
	fmt.Fprintf(stdout, "removed %s\n", path)
	if err := runTool(ctx, cmds[1], stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "knotd no longer watches %s as a service\n", s.Vault)
	return nil
}

// launchdAgent installs a launchd agent (macOS).
type launchdAgent struct{}

var launchdPlist = template.Must(template.New("plist").Funcs(template.FuncMap{"x": xmlText}).Parse(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- Written by 'knotd service install'; 'knotd service uninstall' removes it. -->
<plist version="1.0"><dict>
  <key>Label</key><string>{{x .Label}}</string>
  <key>ProgramArguments</key>
  <array><string>{{x .Exe}}</string><string>{{x .Vault}}</string></array>
  <key>EnvironmentVariables</key>
  <dict><key>PATH</key><string>{{x .Path}}</string></dict>
  <key>RunAtLoad</key><true/>
  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>
  <key>ExitTimeOut</key><integer>30</integer>
  <key>SoftResourceLimits</key><dict><key>NumberOfFiles</key><integer>8192</integer></dict>
  <key>StandardErrorPath</key><string>{{x .Log}}</string>
</dict></plist>
`))

func xmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

func (launchdAgent) label(s service) string { return "dev.knotd." + s.Slug }

func (m launchdAgent) file(s service) string {
	return filepath.Join(s.Home, "Library", "LaunchAgents", m.label(s)+".plist")
}

func (m launchdAgent) plist(s service) (string, string, error) {
	log := filepath.Join(s.Home, "Library", "Logs", "knotd-"+s.Slug+".log")
	var text bytes.Buffer
	err := launchdPlist.Execute(&text, struct {
		service
		Label, Log string
	}{s, m.label(s), log})
	if err != nil {
		return "", "", fmt.Errorf("knotd service: %w", err)
	}
	return text.String(), log, nil
}

func (m launchdAgent) install(ctx context.Context, s service, o serviceOptions, stdout, stderr io.Writer) error {
	text, log, err := m.plist(s)
	if err != nil {
		return err
	}
	path := m.file(s)
	domain := gui()
	bootout := []string{"launchctl", "bootout", domain + "/" + m.label(s)}
	bootstrap := []string{"launchctl", "bootstrap", domain, path}
	if o.dryRun {
		fmt.Fprintf(stdout, "# %s\n%s\n", path, text)
		if !o.noStart {
			fmt.Fprintf(stdout, "would run: %s\n", strings.Join(bootstrap, " "))
		}
		return nil
	}
	warnTemporary(s, stderr)
	if err := writeServiceFile(path, []byte(text)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", path)
	if o.noStart {
		fmt.Fprintf(stdout, "the agent %s starts at your next login (or now: %s)\n", m.label(s), strings.Join(bootstrap, " "))
		return nil
	}
	_ = runTool(ctx, bootout, io.Discard) // an earlier install's, if loaded; none is fine
	if err := runTool(ctx, bootstrap, stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "knotd now watches %s as the launchd agent %s\nlogs: %s\n", s.Vault, m.label(s), log)
	return nil
}

func (m launchdAgent) uninstall(ctx context.Context, s service, o serviceOptions, stdout io.Writer) error {
	path := m.file(s)
	bootout := []string{"launchctl", "bootout", gui() + "/" + m.label(s)}
	if o.dryRun {
		fmt.Fprintf(stdout, "would run: %s\nwould remove %s\n", strings.Join(bootout, " "), path)
		return nil
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("knotd service uninstall: no service for the vault %s (there is no %s)", s.Vault, path)
	}
	if err := runTool(ctx, bootout, stdout); err != nil {
		fmt.Fprintf(stdout, "(the agent was not loaded: %v)\n", err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("knotd service uninstall: %w", err)
	}
	fmt.Fprintf(stdout, "removed %s\nknotd no longer watches %s as a service\n", path, s.Vault)
	return nil
}

// gui is the launchd domain of the user's login session.
func gui() string { return "gui/" + strconv.Itoa(os.Getuid()) }

// writeServiceFile writes a unit or plist: 0644, as the service manager
// reads it, in a folder made if missing.
func writeServiceFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("knotd service install: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("knotd service install: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("knotd service install: %w", err)
	}
	return nil
}

// runTool runs a service manager's command directly (no shell), saying so
// on w; its output goes into the error when it fails.
func runTool(ctx context.Context, argv []string, w io.Writer) error {
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg != "" {
			msg = ": " + msg
		}
		return fmt.Errorf("knotd service: %s: %w%s", strings.Join(argv, " "), err, msg)
	}
	fmt.Fprintf(w, "ran: %s\n", strings.Join(argv, " "))
	return nil
}

// warnTemporary warns when the service would run a knotd built in a
// temporary folder (go run), which goes away.
func warnTemporary(s service, w io.Writer) {
	if rel, err := filepath.Rel(os.TempDir(), s.Exe); err == nil && filepath.IsLocal(rel) {
		fmt.Fprintf(w, "knotd service: warning: %s is in the temporary folder (a go run build?); the service needs a knotd that stays: go install ./cmd/knotd, then install the service with that knotd\n", s.Exe)
	}
}
