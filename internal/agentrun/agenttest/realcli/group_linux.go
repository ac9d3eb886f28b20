package realcli

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// liveGroup returns the processes of the group pgid that are alive:
// zombies are left out, which the machine's init may never reap (in a
// container it may not reap at all), and which write nothing.
func liveGroup(pgid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// The command name (field 2) is in parentheses and may hold
		// spaces and parentheses: the fields after it follow the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:])) // f[0] is field 3, the state
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
