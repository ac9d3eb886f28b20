package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// parseArgs parses args into fs, allowing flags after positional arguments
// ("knotd VAULT --once", "knotd runs show ID --json"), and returns the
// positional ones; "--" ends the flags. Its errors are usageErrors in
// knotd's words, prefixed with the subcommand cmd ("runs"; "" for knotd
// itself) and pointing to its --help: a
// mistyped flag gets a suggestion, a duration without a unit an example.
// flag.ErrHelp is returned as it is.
func parseArgs(fs *flag.FlagSet, cmd string, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			msg := flagError(fs, err)
			if cmd != "" {
				msg = fmt.Sprintf("knotd %s: %s (see knotd %s --help)", cmd, msg, cmd)
			}
			return nil, usageError{msg}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			// The flag package consumed a "--" before the first
			// positional argument already; one here follows one.
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseCommand is parseArgs for the subcommand cmd, whose --help prints
// usage and the flags of fs to stdout: then help is true (and the
// command has nothing more to do).
func parseCommand(fs *flag.FlagSet, cmd, usage string, args []string, stdout io.Writer) (pos []string, help bool, err error) {
	pos, err = parseArgs(fs, cmd, args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		printDefaults(stdout, fs)
		return nil, true, nil
	}
	return pos, false, err
}

// The flag package's messages (Go 1.26), which flagError rewords.
var (
	reUndefined = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	reInvalid   = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-+([^:]+): (.*)$`)
	reNeedsArg  = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
)

// flagError words a flag parse error of fs for people.
func flagError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if m := reUndefined.FindStringSubmatch(msg); m != nil {
		s := "unknown flag --" + m[1]
		if near := suggestFlag(fs, m[1]); near != "" {
			s += "; did you mean --" + near + "?"
		}
		return s
	}
	if m := reNeedsArg.FindStringSubmatch(msg); m != nil {
		return "--" + m[1] + " needs a value"
	}
	if m := reInvalid.FindStringSubmatch(msg); m != nil {
		value, name := m[1], m[2]
		f := fs.Lookup(name)
		if f == nil {
			return msg
		}
		if _, isDur := f.Value.(flag.Getter).Get().(time.Duration); isDur {
			if _, nerr := strconv.ParseFloat(value, 64); nerr == nil {
				return fmt.Sprintf("--%s %s: add a unit, e.g. %ss (ms, s, m and h are units)", name, value, value)
			}
			return fmt.Sprintf("--%s %s: not a duration (write a number with a unit: 300ms, 2s, 10m, 1h)", name, value)
		}
		switch f.Value.(flag.Getter).Get().(type) {
		case int:
			return fmt.Sprintf("--%s %s: not a whole number", name, value)
		case bool:
			return fmt.Sprintf("--%s=%s: a switch takes no value (write --%s, or --%s=false)", name, value, name, name)
		}
		return fmt.Sprintf("--%s %s: %s", name, value, m[3])
	}
	return msg
}

// suggestFlag returns the flag of fs nearest to name (a typo), or "".
func suggestFlag(fs *flag.FlagSet, name string) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return suggestWord(names, name)
}

// suggestWord returns the word of words nearest to name (a typo: a few
// edits away, or an abbreviation of three letters or more), or "".
func suggestWord(words []string, name string) string {
	best, bestD := "", 0
	for _, w := range words {
		d := editDistance(name, w)
		if strings.HasPrefix(w, name) && len(name) >= 3 {
			d = 1 // an abbreviation
		}
		limit := 2
		if len(name) <= 4 {
			limit = 1
		}
		if d <= limit && (best == "" || d < bestD) {
			best, bestD = w, d
		}
	}
	return best
}

// editDistance is the Damerau–Levenshtein distance (optimal string
// alignment) of a and b: insertions, deletions, substitutions and
// transpositions of adjacent characters.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
