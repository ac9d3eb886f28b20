package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procStat is what knotd reads of /proc/<pid>/stat.
type procStat struct {
	state byte   // field 3: R, S, Z, ...
	pgrp  int    // field 5
	start uint64 // field 22: clock ticks after boot
}

// readStat reads /proc/<pid>/stat.
func readStat(pid int) (procStat, error) {
	b, err := readBounded("/proc/"+strconv.Itoa(pid)+"/stat", 4096)
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

// parseStat parses a /proc/<pid>/stat line. The command name (field 2) is
// in parentheses and may hold spaces and parentheses itself: the fields
// that follow start after the last ')'.
func parseStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errors.New("agentrun: malformed /proc stat")
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, errors.New("agentrun: malformed /proc stat")
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return procStat{}, fmt.Errorf("agentrun: malformed /proc stat: %w", err)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("agentrun: malformed /proc stat: %w", err)
	}
	return procStat{state: f[0][0], pgrp: pgrp, start: start}, nil
}

// readBounded reads at most max bytes of a file.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, max))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return b, err
}

// bootID returns the id of the running boot.
func bootID() (string, error) {
	b, err := readBounded("/proc/sys/kernel/random/boot_id", 128)
	if err != nil {
		return "", fmt.Errorf("agentrun: boot id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// groupOf returns the group the agent with pid leads, to record.
func groupOf(pid int, run string) (Group, bool) {
	st, err := readStat(pid)
	if err != nil {
		return Group{}, false
	}
	boot, err := bootID()
	if err != nil {
		return Group{}, false
	}
	return Group{ID: pid, Start: st.start, Boot: boot, Run: run}, true
}

// hasRun reports whether the process pid has run's id in its environment
// (as every process the agent started has, unless it cleared it).
func hasRun(pid int, run string) bool {
	if run == "" {
		return false
	}
	b, err := readBounded("/proc/"+strconv.Itoa(pid)+"/environ", 1<<20)
	if err != nil {
		return false
	}
	want := []byte(RunIDEnv + "=" + run)
	for v := range bytes.SplitSeq(b, []byte{0}) {
		if bytes.Equal(v, want) {
			return true
		}
	}
	return false
}

// members returns the running processes (zombies left out) whose group
// is g's id, and whether they are verified to be g's: the group's number
// is only reused once every process of the group is gone, so they are
// g's if one of them is (its leader, with the recorded start time, or a
// process with the run's id in its environment). A process with g's pid
// and another start time, or one in the group that started before its
// leader did, says the number was reused: none is g's.
func members(g Group) (pids []int, verified bool, why string, err error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false, "", fmt.Errorf("agentrun: list processes: %w", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.pgrp != g.ID || st.state == 'Z' {
			continue // gone meanwhile, or not in the group
		}
		switch {
		case pid == g.ID && st.start != g.Start:
			return nil, false, fmt.Sprintf("process %d is not the agent that ran (it started at another time): the group's number was reused", pid), nil
		case st.start < g.Start:
			return nil, false, fmt.Sprintf("process %d of group %d started before the agent that ran: the group's number was reused", pid, g.ID), nil
		}
		pids = append(pids, pid)
		if pid == g.ID || hasRun(pid, g.Run) {
			verified = true
		}
	}
	if len(pids) > 0 && !verified {
		why = fmt.Sprintf("processes %v of group %d cannot be told from a later group with the same number (the agent is gone, and none has the run's id %s in its environment)", pids, g.ID, g.Run)
	}
	return pids, verified, why, nil
}

// EndOrphans ends what is left running of agents' process groups that a
// knotd killed while they ran recorded (see Group): for each group still
// there and verified to be the recorded one, SIGTERM to the group, and
// SIGKILL grace later to what is left. A group that cannot be verified
// (its number was reused, or nothing in it shows it is the agent's) is
// left alone, and said so. It returns what it did with each group.
func EndOrphans(groups []Group, grace time.Duration) []Orphan {
	boot, err := bootID()
	out := make([]Orphan, 0, len(groups))
	for _, g := range groups {
		o := Orphan{Group: g}
		switch {
		case err != nil:
			o.Err = err
		case g.Boot != boot:
			// The machine restarted since: nothing of the group is left.
		default:
			endGroup(&o, grace)
		}
		out = append(out, o)
	}
	return out
}

func endGroup(o *Orphan, grace time.Duration) {
	pids, ok, why, err := members(o.Group)
	if err != nil || !ok {
		o.Err, o.Left = err, why
		return
	}
	o.Ended = len(pids)
	if err := syscall.Kill(-o.ID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		o.Err = fmt.Errorf("agentrun: end process group %d: %w", o.ID, err)
		return
	}
	for deadline := time.Now().Add(grace); ; {
		pids, ok, why, err = members(o.Group)
		if err != nil || len(pids) == 0 {
			o.Err = err
			return
		}
		if !ok {
			o.Left = why
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(orphanPoll)
	}
	o.Killed = len(pids)
	if err := syscall.Kill(-o.ID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		o.Err = fmt.Errorf("agentrun: kill process group %d: %w", o.ID, err)
	}
}
