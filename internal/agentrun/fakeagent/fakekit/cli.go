package fakekit

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Conversations stores the turn count of each conversation of one fake CLI
// under the state directory; perDir keys them by working directory too, as
// Claude Code and Gemini CLI do.
type Conversations struct{ dir string }

func (inv *Invocation) Conversations(cli string, perDir bool) (Conversations, error) {
	if inv.State == "" {
		return Conversations{}, errors.New(EnvState + " is not set")
	}
	dir := filepath.Join(inv.State, cli)
	if perDir {
		sum := sha256.Sum256([]byte(inv.Dir))
		dir = filepath.Join(dir, hex.EncodeToString(sum[:8]))
	}
	return Conversations{dir: dir}, os.MkdirAll(dir, 0o700)
}

var safeID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)

func (c Conversations) path(id string) (string, error) {
	if !safeID.MatchString(id) {
		return "", fmt.Errorf("bad conversation id %q", id)
	}
	return filepath.Join(c.dir, id), nil
}

// turns returns the number of turns of a conversation, 0 when it does not
// exist.
func (c Conversations) Turns(id string) int {
	p, err := c.path(id)
	if err != nil {
		return 0
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// bump adds a turn to a conversation, creating it, and returns the count.
func (c Conversations) Bump(id string) (int, error) {
	p, err := c.path(id)
	if err != nil {
		return 0, err
	}
	n := c.Turns(id) + 1
	return n, os.WriteFile(p, []byte(strconv.Itoa(n)), 0o600)
}

func NewID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

var UUIDRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func Reply(turns int) string {
	if r := os.Getenv(EnvReply); r != "" {
		return r
	}
	return fmt.Sprintf("FAKE REPLY (user messages seen: %d)", turns)
}

// failMode returns EnvFail; "hang" blocks here until the process is killed.
func FailMode() string {
	mode := os.Getenv(EnvFail)
	if mode == "hang" {
		SleepForever()
	}
	return mode
}

func SleepForever() {
	for {
		time.Sleep(time.Hour)
	}
}

// Flags is a tiny parser for the fakes' command lines: value flags take
// the next argument or "=value"; anything unknown is an error, so a test
// notices a preset passing a flag the fake does not know.
type Flags struct {
	Values map[string]string
	Bools  map[string]bool
	Rest   []string
}

func ParseFlags(args []string, valueFlags, boolFlags []string) (Flags, error) {
	f := Flags{Values: map[string]string{}, Bools: map[string]bool{}}
	isValue := func(s string) bool { return contains(valueFlags, s) }
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		switch {
		case a == "-" || !strings.HasPrefix(a, "-"):
			f.Rest = append(f.Rest, a)
		case isValue(name) && hasVal:
			f.Values[name] = val
		case isValue(a):
			if i+1 >= len(args) {
				return f, fmt.Errorf("option '%s' argument missing", a)
			}
			i++
			f.Values[a] = args[i]
		case contains(boolFlags, a):
			f.Bools[a] = true
		default:
			return f, fmt.Errorf("unknown option '%s'", a)
		}
	}
	return f, nil
}

// oneOf reports an error when the value flag name was given a value not in
// choices, as the real CLIs refuse one.
func (f Flags) OneOf(name string, choices ...string) error {
	if v, ok := f.Values[name]; ok && !contains(choices, v) {
		return fmt.Errorf("option '%s' argument '%s' is invalid (choices: %s)", name, v, strings.Join(choices, ", "))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// File returns the path of a file kept beside a conversation (its id with
// the suffix ext), for what a fake keeps about it besides its turns.
func (c Conversations) File(id, ext string) (string, error) {
	p, err := c.path(id)
	return p + ext, err
}
