package testutil

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// ErrNoSmaps is MappedRSS's error where /proc/self/smaps cannot be read.
var ErrNoSmaps = errors.New("no /proc/self/smaps")

// MappedRSS returns how many kilobytes of the file at path this process
// has resident through its mappings of it, from /proc/self/smaps. It does
// not touch a testing.T, so that a hook can call it from other goroutines
// (see MustMappedRSS).
func MappedRSS(path string) (int, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrNoSmaps, err)
	}
	defer f.Close() // read only
	kb, in, found := 0, false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			// A mapping's header line: range perms offset dev inode [path].
			in = len(fields) >= 6 && strings.Join(fields[5:], " ") == path
			found = found || in
		case in && fields[0] == "Rss:":
			n, err := strconv.Atoi(fields[1])
			if err != nil {
				return 0, fmt.Errorf("smaps: %q: %v", sc.Text(), err)
			}
			kb += n
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("%s is not mapped", path)
	}
	return kb, nil
}

// CheckSmaps skips the test when err is ErrNoSmaps and fails it on any
// other error.
func CheckSmaps(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrNoSmaps) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// MustMappedRSS is MappedRSS for the test's goroutine (see CheckSmaps).
func MustMappedRSS(t testing.TB, path string) int {
	t.Helper()
	kb, err := MappedRSS(path)
	CheckSmaps(t, err)
	return kb
}
