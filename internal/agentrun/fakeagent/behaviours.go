package fakeagent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/knotd/knotd/internal/agentrun/fakeagent/fakekit"
)

// The generic behaviours. Arguments after the program name tune them.
const (
	// Echo replies "ECHO: " and the first line of its standard input, or
	// of its last argument when standard input is empty.
	Echo = "echo"
	// JSON prints {"answer": {"text": …}, "conversation": …}; with the
	// argument "lines" it prints JSON lines with a non-JSON line between.
	JSON = "json"
	// Fail writes its first argument (default "something broke") to
	// standard error and exits with its second (default 3).
	Fail = "fail"
	// Empty reads its input and prints nothing.
	Empty = "empty"
	// Huge writes as many bytes as its first argument says (default 3
	// MiB) to standard output.
	Huge = "huge"
	// Hang records its call, then blocks until it is killed.
	Hang = "hang"
	// Stubborn starts a grandchild that ignores SIGTERM, writes its pid to
	// <state>/grandchild.pid and holds standard output open forever. With
	// the argument "exit" the fake then exits 0 after a reply; with "hang"
	// it ignores SIGTERM itself and blocks.
	Stubborn = "stubborn"
	// File replies with the permissions, size and first line of the file
	// named by its last argument, as JSON.
	File = "file"
	// LongLine prints one JSON line {"pad": …, "answer": …} whose pad is as
	// long as its first argument says (default 100 KiB).
	LongLine = "long-line"

	stubbornChild = "stubborn-child"
)

// GrandchildPIDFile is the file, in the state directory, where the Stubborn
// behaviour's grandchild writes its process id.
const GrandchildPIDFile = "grandchild.pid"

func argOr(args []string, i int, def string) string {
	if i < len(args) {
		return args[i]
	}
	return def
}

func echo(inv *Invocation) int {
	in, err := inv.Record()
	if err != nil {
		return inv.Die(err)
	}
	if strings.TrimSpace(in) == "" && len(inv.Args) > 0 {
		in = inv.Args[len(inv.Args)-1]
	}
	first, _, _ := strings.Cut(in, "\n")
	fmt.Fprintln(inv.Stdout, "ECHO: "+first)
	return fakekit.Gated(inv)
}

func jsonReply(inv *Invocation) int {
	in, err := inv.Record()
	if err != nil {
		return inv.Die(err)
	}
	doc := map[string]any{"answer": map[string]any{"text": fmt.Sprintf("JSON REPLY to %d bytes", len(in))}, "conversation": "conv-42"}
	b, err := json.Marshal(doc)
	if err != nil {
		return inv.Die(err)
	}
	if argOr(inv.Args, 0, "") == "lines" {
		fmt.Fprintln(inv.Stdout, `{"type": "progress", "answer": {"note": "working"}}`)
		fmt.Fprintln(inv.Stdout, "warning: this line is not JSON")
		if code := fakekit.Gated(inv); code != 0 {
			return code
		}
	}
	fmt.Fprintln(inv.Stdout, string(b))
	return 0
}

func fail(inv *Invocation) int {
	if _, err := inv.Record(); err != nil {
		return inv.Die(err)
	}
	code, err := strconv.Atoi(argOr(inv.Args, 1, "3"))
	if err != nil {
		return inv.Die(err)
	}
	fmt.Fprintln(inv.Stderr, argOr(inv.Args, 0, "something broke"))
	return code
}

func empty(inv *Invocation) int {
	if _, err := inv.Record(); err != nil {
		return inv.Die(err)
	}
	return 0
}

func huge(inv *Invocation) int {
	if _, err := inv.Record(); err != nil {
		return inv.Die(err)
	}
	n, err := strconv.Atoi(argOr(inv.Args, 0, strconv.Itoa(3<<20)))
	if err != nil {
		return inv.Die(err)
	}
	line := strings.Repeat("y", 1023) + "\n"
	for n > 0 {
		chunk := line[:min(n, len(line))]
		if _, err := fmt.Fprint(inv.Stdout, chunk); err != nil {
			return inv.Die(err)
		}
		n -= len(chunk)
	}
	return 0
}

func hang(inv *Invocation) int {
	if _, err := inv.Record(); err != nil {
		return inv.Die(err)
	}
	fakekit.SleepForever()
	return 0
}

func stubborn(inv *Invocation) int {
	if _, err := inv.Record(); err != nil {
		return inv.Die(err)
	}
	if inv.State == "" {
		return inv.Die(errors.New(fakekit.EnvState + " is not set"))
	}
	exe, err := os.Executable()
	if err != nil {
		return inv.Die(err)
	}
	child := exec.Command(exe)
	child.Env = append(os.Environ(), EnvBehaviour+"="+stubbornChild)
	child.Stdout = os.Stdout // the same pipe: the grandchild holds it open
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		return inv.Die(err)
	}
	// Wait until the grandchild has set itself up, so it is certain to be
	// running (and ignoring SIGTERM) before this process goes on.
	pidFile := filepath.Join(inv.State, GrandchildPIDFile)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := os.Stat(pidFile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return inv.Die(errors.New("the grandchild did not start"))
		}
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Fprintln(inv.Stdout, "STUBBORN REPLY")
	if argOr(inv.Args, 0, "exit") == "exit" {
		return 0
	}
	signal.Ignore(syscall.SIGTERM)
	fakekit.SleepForever()
	return 0
}

func stubbornGrandchild(inv *Invocation) int {
	signal.Ignore(syscall.SIGTERM)
	tmp := filepath.Join(inv.State, GrandchildPIDFile+".tmp")
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return inv.Die(err)
	}
	if err := os.Rename(tmp, filepath.Join(inv.State, GrandchildPIDFile)); err != nil {
		return inv.Die(err)
	}
	fakekit.SleepForever()
	return 0
}

func file(inv *Invocation) int {
	if _, err := inv.Record(); err != nil {
		return inv.Die(err)
	}
	if len(inv.Args) == 0 {
		return inv.Die(errors.New("no file argument"))
	}
	path := inv.Args[len(inv.Args)-1]
	info, err := os.Stat(path)
	if err != nil {
		return inv.Die(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return inv.Die(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	out, err := json.Marshal(map[string]any{"mode": fmt.Sprintf("%04o", info.Mode().Perm()), "size": len(b), "first_line": first, "path": path})
	if err != nil {
		return inv.Die(err)
	}
	fmt.Fprintln(inv.Stdout, string(out))
	return 0
}

func longLine(inv *Invocation) int {
	if _, err := inv.Record(); err != nil {
		return inv.Die(err)
	}
	n, err := strconv.Atoi(argOr(inv.Args, 0, strconv.Itoa(100<<10)))
	if err != nil {
		return inv.Die(err)
	}
	b, err := json.Marshal(map[string]any{"pad": strings.Repeat("p", n), "answer": fmt.Sprintf("LONG LINE REPLY after %d bytes", n)})
	if err != nil {
		return inv.Die(err)
	}
	fmt.Fprintln(inv.Stdout, string(b))
	return 0
}
