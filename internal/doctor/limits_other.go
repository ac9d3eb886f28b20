//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package doctor

// systemLimits has nothing to say on this system.
func systemLimits() ([]Limit, error) { return nil, nil }
