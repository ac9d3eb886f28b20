package proc

import (
	"slices"
	"testing"
)

func TestBuildEnv(t *testing.T) {
	base := []string{"PATH=/bin", "SECRET=x", "KEEP=1", "KNOT_STRAND=forged", "OVERRIDE=old", "BROKEN"}
	got := Environ(base, map[string]string{"OVERRIDE": "new", "ADDED": "a"}, []string{"SECRET"}, [][2]string{{"KNOT_STRAND", "a.md"}})
	want := []string{"PATH=/bin", "KEEP=1", "ADDED=a", "OVERRIDE=new", "KNOT_STRAND=a.md"}
	if !slices.Equal(got, want) {
		t.Errorf("buildEnv = %q; want %q", got, want)
	}
}
