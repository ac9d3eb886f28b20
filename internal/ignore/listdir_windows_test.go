package ignore

import "testing"

// addSpecialFiles adds nothing on Windows.
func addSpecialFiles(*testing.T, map[string]func(p string) error) {}
