package watcher

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestInotifyLimitMessage(t *testing.T) {
	tests := []struct {
		instances bool
		want      []string
	}{
		{false, []string{
			"inotify watch limit reached",
			"fs.inotify.max_user_watches=8192", "fs.inotify.max_user_instances=128",
			"knotd watches 8190 directories", "every 10s",
			"sudo sysctl fs.inotify.max_user_watches=524288",
			"echo fs.inotify.max_user_watches=524288 | sudo tee /etc/sysctl.d/90-knotd-inotify.conf",
		}},
		{true, []string{
			"inotify instance limit reached",
			"fs.inotify.max_user_watches=8192", "fs.inotify.max_user_instances=128",
			"sudo sysctl fs.inotify.max_user_instances=1024",
		}},
	}
	for _, tt := range tests {
		got := inotifyLimitMessage(tt.instances, "8192", "128", 8190, 10*time.Second)
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("inotifyLimitMessage(instances=%v) = %q; want it to contain %q", tt.instances, got, w)
			}
		}
	}
}

func TestLimitMessage_ReadsCurrentValues(t *testing.T) {
	got := limitMessage(fmt.Errorf("add: %w", syscall.ENOSPC), 3, time.Second)
	want := "fs.inotify.max_user_watches=" + readProcValue("/proc/sys/fs/inotify/max_user_watches")
	if !strings.Contains(got, want) || strings.Contains(got, "=unknown") {
		t.Errorf("limitMessage = %q; want it to contain %q", got, want)
	}
}

func TestIsLimitError(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("x: %w", syscall.ENOSPC), true},
		{fmt.Errorf("x: %w", syscall.EMFILE), true},
		{syscall.ENFILE, true},
		{syscall.EACCES, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := isLimitError(tt.err); got != tt.want {
			t.Errorf("isLimitError(%v) = %v; want %v", tt.err, got, tt.want)
		}
	}
}
