//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package doctor

import "syscall"

// systemLimits reads the open-file limit kqueue counts against: one
// descriptor per watched file and directory.
func systemLimits() ([]Limit, error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return nil, err
	}
	return []Limit{{Name: "the open-file limit (ulimit -n)", Value: int64(r.Cur),
		Fix: "raise it with ulimit -n, or NumberOfFiles in the launchd plist"}}, nil
}
