package doctor

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// systemLimits reads Linux's inotify limits: one watch per directory,
// counted per user.
func systemLimits() ([]Limit, error) {
	var out []Limit
	for _, l := range []struct{ name, file string }{{"fs.inotify.max_user_watches", "max_user_watches"}} {
		b, err := os.ReadFile("/proc/sys/fs/inotify/" + l.file)
		if err != nil {
			return nil, err
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.name, err)
		}
		out = append(out, Limit{Name: l.name, Value: v, PerDir: true,
			Fix: "sudo sysctl " + l.name + "=524288, and the same line in /etc/sysctl.d/ to keep it"})
	}
	return out, nil
}
