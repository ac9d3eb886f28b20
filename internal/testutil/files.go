package testutil

import (
	"os"
	"strings"
)

// WriteInto opens the existing file p with flag and writes b into it, as
// an editor that saves in place does; in place (neither appending nor
// truncating at the open), it cuts what the file held beyond b.
func WriteInto(p string, flag int, b []byte) error {
	f, err := os.OpenFile(p, flag, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil && flag&(os.O_APPEND|os.O_TRUNC) == 0 {
		err = f.Truncate(int64(len(b)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Tail returns the last lines of b, for messages.
func Tail(b []byte) string {
	lines := strings.Split(string(b), "\n")
	return strings.Join(lines[max(0, len(lines)-6):], "\n")
}
