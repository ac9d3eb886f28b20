package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/knotd/knotd/internal/tieoff"
	"github.com/knotd/knotd/internal/vaultfs"
)

// The git merge driver knotd git setup configures.
const (
	mergeDriver     = "knotd-tieoff"
	attributesLine  = "*.tieoff.md merge=" + mergeDriver
	mergeDriverName = "knotd: tie-off sections merged by run id"
)

const mergeTieoffUsage = `usage: knotd merge-tieoff BASE OURS THEIRS [PATH]

git's merge driver for tie-offs (set up by 'knotd git setup'): git runs it as
knotd merge-tieoff %O %A %B %P when both sides of a merge, rebase or
cherry-pick changed a tie-off. BASE, OURS and THEIRS are the common ancestor's,
the current branch's and the other side's versions (files git made for the
merge), PATH the tie-off's path in the repository (for messages).

Sections merge by run id: each run once, in time order; a section one side
changed (or removed, as a replace-mode tie-off does) and the other kept as it
was is changed (removed). The result goes to OURS and the exit status is 0.
What cannot be placed (both sides changed the same section, one changed what
the other removed, a section with broken headers, a file that is not a
tie-off) is written between git's conflict markers (<<<<<<< ours, ||||||| base,
=======, >>>>>>> theirs) with the rest merged, and the exit status is 1:
git reports a conflict, to resolve as any other. No word of either side is
dropped. A version larger than 64 MiB is not merged by run id: the three
versions are written whole between conflict markers.
`

// runMergeTieoff is knotd merge-tieoff, git's merge driver for tie-offs.
func runMergeTieoff(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("knotd merge-tieoff", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	pos, help, err := parseCommand(fs, "merge-tieoff", mergeTieoffUsage, args, stdout)
	if help || err != nil {
		return err
	}
	if len(pos) != 3 && len(pos) != 4 {
		return usageError{fmt.Sprintf("knotd merge-tieoff: BASE OURS THEIRS [PATH], got %d arguments", len(pos))}
	}
	base, ours, theirs := pos[0], pos[1], pos[2]
	name := ours
	if len(pos) == 4 {
		name = pos[3]
	}
	var data [3][]byte
	tooLarge := false
	for i, p := range []string{base, ours, theirs} {
		data[i], err = readBounded(p, tieoff.MaxSize)
		switch {
		case errors.Is(err, tieoff.ErrTooLarge):
			tooLarge = true
		case err != nil:
			return fmt.Errorf("knotd merge-tieoff: %s: %w (nothing merged; git reports a conflict)", name, err)
		}
	}
	if tooLarge {
		if err := writeWholeConflict(base, ours, theirs); err != nil {
			return fmt.Errorf("knotd merge-tieoff: %s: %w (nothing merged; git reports a conflict)", name, err)
		}
		fmt.Fprintf(stderr, "knotd merge-tieoff: %s: a version is larger than %d MiB, too large to merge by run id: the three versions are left between conflict markers\n", name, tieoff.MaxSize>>20)
		return errSilent
	}
	merged, conflicts := tieoff.Merge3(data[0], data[1], data[2])
	if err := replaceFile(ours, func(w io.Writer) error { _, err := w.Write(merged); return err }); err != nil {
		return fmt.Errorf("knotd merge-tieoff: %s: %w (nothing merged; git reports a conflict)", name, err)
	}
	if len(conflicts) > 0 {
		for _, c := range conflicts {
			fmt.Fprintf(stderr, "knotd merge-tieoff: %s: conflict: %s\n", name, c.Msg)
		}
		fmt.Fprintf(stderr, "knotd merge-tieoff: %s: the rest is merged; resolve the conflict markers as any git conflict\n", name)
		return errSilent
	}
	return nil
}

// readBounded reads the file at path, at most limit bytes (ErrTooLarge
// beyond). It is one of git's files for the merge, outside the vault.
func readBounded(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() // read only
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", tieoff.ErrTooLarge, limit)
	}
	return b, nil
}

// replaceFile writes path anew through a temporary file beside it, which
// write fills, renamed over it: path is the old file or the new one.
func replaceFile(path string, write func(io.Writer) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".knotd-merge-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name()) // a temporary file that was never the result
		}
	}()
	w := bufio.NewWriter(tmp)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// writeWholeConflict writes into ours the three versions between git's
// conflict markers, copied, never read whole.
func writeWholeConflict(base, ours, theirs string) error {
	return replaceFile(ours, func(w io.Writer) error {
		part := func(marker, path string) error {
			if _, err := io.WriteString(w, marker); err != nil {
				return err
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close() // read only
			lw := &lastByte{w: w}
			if _, err := io.Copy(lw, f); err != nil {
				return err
			}
			if lw.n > 0 && lw.last != '\n' {
				_, err = io.WriteString(w, "\n")
			}
			return err
		}
		if err := part("<<<<<<< ours\n", ours); err != nil {
			return err
		}
		if err := part("||||||| base\n", base); err != nil {
			return err
		}
		if err := part("=======\n", theirs); err != nil {
			return err
		}
		_, err := io.WriteString(w, ">>>>>>> theirs\n")
		return err
	})
}

// lastByte passes writes on, keeping the last byte written.
type lastByte struct {
	w    io.Writer
	n    int64
	last byte
}

func (l *lastByte) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	if n > 0 {
		l.n += int64(n)
		l.last = p[n-1]
	}
	return n, err
}

const gitUsage = `usage: knotd git setup [VAULT]

Sets up git to merge VAULT's tie-offs by run id (see 'knotd merge-tieoff
--help'), so that two clones that both answered notes (two people, a laptop
and a CI job) merge, rebase and cherry-pick without a conflict on the
tie-offs:

  .gitattributes   the line "*.tieoff.md merge=knotd-tieoff" in VAULT's
                   .gitattributes, added if it is not there (the file's other
                   lines are kept); commit it
  git config       merge.knotd-tieoff.name and merge.knotd-tieoff.driver in
                   the repository's own config (.git/config): the driver is
                   this knotd's absolute path, quoted for the shell git runs
                   drivers with, and "merge-tieoff %O %A %B %P"

git config is not committed nor cloned: run knotd git setup in each clone (a
clone without it merges tie-offs line by line, as before). Running it again
changes nothing, or points the driver at this knotd after it moved.
`

// runGit is knotd git setup.
func runGit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("knotd git", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	pos, help, err := parseCommand(fs, "git", gitUsage, args, stdout)
	if help || err != nil {
		return err
	}
	if len(pos) == 0 || pos[0] != "setup" {
		return usageError{"knotd git: say setup (see knotd git --help)"}
	}
	arg, err := vaultArg("git setup", pos[1:])
	if err != nil {
		return err
	}
	root, err := vaultRoot(arg, nil)
	if err != nil {
		return err
	}
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return fmt.Errorf("knotd git setup: git is not on PATH: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, gitBin, append([]string{"-C", root}, args...)...)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
		}
		return strings.TrimSpace(out.String()), nil
	}
	if inside, err := git("rev-parse", "--is-inside-work-tree"); err != nil || inside != "true" {
		return fmt.Errorf("knotd git setup: %s is not in a git work tree (git init or git clone first)", root)
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return fmt.Errorf("knotd git setup: find knotd's own executable: %w", err)
	}
	driver := shellQuote(exe) + " merge-tieoff %O %A %B %P"
	added, err := addAttributes(root)
	if err != nil {
		return fmt.Errorf("knotd git setup: %w", err)
	}
	if added {
		fmt.Fprintf(stdout, "%s: added %s (commit it)\n", filepath.Join(root, ".gitattributes"), attributesLine)
	} else {
		fmt.Fprintf(stdout, "%s: has %s already\n", filepath.Join(root, ".gitattributes"), attributesLine)
	}
	for _, kv := range [][2]string{{"merge." + mergeDriver + ".name", mergeDriverName}, {"merge." + mergeDriver + ".driver", driver}} {
		if _, err := git("config", "--local", kv[0], kv[1]); err != nil {
			return fmt.Errorf("knotd git setup: %w", err)
		}
		fmt.Fprintf(stdout, "git config --local %s %q\n", kv[0], kv[1])
	}
	fmt.Fprintln(stdout, "tie-offs now merge by run id in this clone; run knotd git setup in each other clone too")
	return nil
}

// shellQuote quotes s for a POSIX shell (git runs merge drivers with sh).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// addAttributes adds attributesLine to the vault's .gitattributes unless a
// line says it already, keeping the file's other lines and line endings;
// it reports whether it added it.
func addAttributes(vault string) (bool, error) {
	root, err := os.OpenRoot(vault)
	if err != nil {
		return false, err
	}
	defer root.Close() // no file of it is written through it after Replace
	const name = ".gitattributes"
	old, _, err := vaultfs.ReadFile(root, name, 1<<20)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("%s: %w", name, err)
	}
	for _, l := range strings.Split(string(old), "\n") {
		if strings.Join(strings.Fields(l), " ") == attributesLine {
			return false, nil
		}
	}
	eol := "\n"
	if bytes.Contains(old, []byte("\r\n")) {
		eol = "\r\n"
	}
	updated := bytes.Clone(old)
	if len(updated) > 0 && updated[len(updated)-1] != '\n' {
		updated = append(updated, eol...)
	}
	updated = append(updated, attributesLine+eol...)
	check := func() error {
		now, _, err := vaultfs.ReadFile(root, name, 1<<20)
		if errors.Is(err, fs.ErrNotExist) && old == nil {
			return nil
		}
		if err != nil || !bytes.Equal(now, old) {
			return fmt.Errorf("%s changed while knotd added its line; run knotd git setup again", name)
		}
		return nil
	}
	if err := vaultfs.Replace(root, name, updated, vaultfs.ReplaceOptions{Check: check}); err != nil {
		return false, fmt.Errorf("%s: %w", name, err)
	}
	return true, nil
}
