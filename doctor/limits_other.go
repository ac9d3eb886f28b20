//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package doctor

// SystemLimits has nothing to say on this system.
func SystemLimits() ([]Limit, error) { return nil, nil }
