package main

import (
	"context"
	"flag"
	"fmt"
	"html"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/knotd/knotd/internal/config"
	"github.com/knotd/knotd/internal/console"
	"github.com/knotd/knotd/internal/control"
	"github.com/knotd/knotd/internal/vault"
)

const consoleUsage = `usage: knotd console [--addr 127.0.0.1:PORT] [--no-open] [VAULT]

Serves the live console of VAULT (default: the current folder's) on a
loopback address and prints its address, which carries a secret token: the
notes with their last run, outcome and cost; the runs in progress with
their output as it comes, the queue, failures and paused notes; a note's
tie-off beside its runs; buttons to run, retry, pause and resume; the
questions agents asked, with Approve and Deny buttons. It works
through the running knotd (start it first) and runs until interrupted.
Only you can use it: the address's token is needed for every request, and
requests from other web pages are refused.

Flags:
`

// runConsole is knotd console.
func runConsole(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("knotd console", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	addr := fs.String("addr", "127.0.0.1:0", "listen on `ADDR`, a loopback address and port (port 0: any free port)")
	noOpen := fs.Bool("no-open", false, "do not open the console in a web browser; only print its address")
	pos, help, err := parseCommand(fs, "console", consoleUsage, args, stdout)
	if help || err != nil {
		return err
	}
	arg, err := vaultArg("console", pos)
	if err != nil {
		return err
	}
	if err := console.CheckAddr(*addr); err != nil {
		return usageError{"knotd console: --addr: " + err.Error()}
	}
	root, err := knownVault(arg, "console")
	if err != nil {
		return err
	}
	sock, known, err := vault.ControlSocket("", root)
	if err != nil {
		return err
	}
	runs, _, err := vault.RunsDir("", root)
	if err != nil {
		return err
	}
	if !known {
		return fmt.Errorf("knotd console: knotd never ran on %s on this machine: start it first (knotd %s)", root, root)
	}
	// The notes list leaves out what knotd ignores, configured patterns
	// included; a configuration knotd refuses leaves only the ignore files.
	cfg, err := config.Load(config.LoadOptions{Vault: root})
	if err != nil {
		fmt.Fprintf(stderr, "knotd console: %v (the notes list follows the ignore files only)\n", err)
		cfg = &config.Config{}
	}
	ln, err := console.Listen(*addr)
	if err != nil {
		return fmt.Errorf("knotd console: %w", err)
	}
	c, err := console.New(console.Options{
		Root:    root,
		Backend: &control.Client{Path: sock},
		Stored:  func() (control.Status, bool, error) { return vault.StoredStatus("", root) },
		RunsDir: runs,

		ObsidianDir: cfg.ObsidianDir,
		Ignore:      cfg.Ignore,
		Off: func(rel string) string {
			if sc := cfg.ScopeOf(rel); sc.Off {
				return sc.Why
			}
			return ""
		},
		Addr: ln.Addr().String(),
	})
	if err != nil {
		_ = ln.Close() // never served
		return err
	}
	defer func() {
		if cerr := c.Close(); cerr != nil {
			fmt.Fprintln(stderr, "knotd console:", cerr)
		}
	}()
	fmt.Fprintln(stdout, c.URL())
	fmt.Fprintf(stderr, "knotd console: serving %s at the address above until interrupted (Ctrl-C); keep the address to yourself: it is the key\n", root)
	if !*noOpen {
		dir, err := openBrowser(c.URL())
		if dir != "" {
			defer func() {
				if err := os.RemoveAll(dir); err != nil {
					fmt.Fprintln(stderr, "knotd console:", err)
				}
			}()
		}
		if err != nil {
			fmt.Fprintf(stderr, "knotd console: could not open a web browser (%v); open the address above\n", err)
		}
	}
	return c.Serve(ctx, ln)
}

// openBrowser opens url in the user's web browser without putting it on a
// command line, where other users of the machine could read its token: it
// writes a page that redirects there into a new private folder (0700, the
// page 0600) and opens that file. The folder is left for the browser,
// which may read the page after this returns, until the console stops:
// the caller removes it then (dir, also when err is set).
func openBrowser(url string) (dir string, err error) {
	dir, page, err := openPage(url)
	if err != nil {
		return dir, err
	}
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", page)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", page)
	default:
		cmd = exec.Command("xdg-open", page)
	}
	if err := cmd.Start(); err != nil {
		return dir, err
	}
	go func() { _ = cmd.Wait() }() // reaps the opener, which exits once it handed the page on; its status says nothing about the browser
	return dir, nil
}

// openPage writes the page that redirects to url, in a new folder of the
// temporary directory that only its owner can open.
func openPage(url string) (dir, page string, err error) {
	dir, err = os.MkdirTemp("", "knotd-console-")
	if err != nil {
		return "", "", err
	}
	page = filepath.Join(dir, "open.html")
	pageText := `<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">` +
		`<meta http-equiv="refresh" content="0;url=` + html.EscapeString(url) + `"><title>knotd console</title>` +
		`<p>Opening the knotd console…</p>`
	if err := os.WriteFile(page, []byte(pageText), 0o600); err != nil {
		return dir, "", err
	}
	return dir, page, nil
}
