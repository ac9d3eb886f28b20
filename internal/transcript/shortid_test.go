package transcript

import (
	"reflect"
	"testing"
)

// TestShortIDs: a run's short id is the end of its id, ShortLen long, and
// longer only where another run's id ends the same.
func TestShortIDs(t *testing.T) {
	for _, tt := range []struct {
		name string
		ids  []string
		want map[string]string
	}{
		{"distinct", []string{"01a1ffd2-2797-7eef-b460-c7d42f598d8c", "01a1ffd2-2797-7eef-b460-c7d42f598d8d"},
			map[string]string{"01a1ffd2-2797-7eef-b460-c7d42f598d8c": "2f598d8c", "01a1ffd2-2797-7eef-b460-c7d42f598d8d": "2f598d8d"}},
		{"same last 8", []string{"01a1ffd2-2797-7eef-b460-c7d42f598d8c", "01a1ffd2-2797-7eef-b460-c7d52f598d8c", "01a1ffd3-2797-7eef-b460-c7c42f598d8c"},
			map[string]string{
				"01a1ffd2-2797-7eef-b460-c7d42f598d8c": "d42f598d8c",
				"01a1ffd2-2797-7eef-b460-c7d52f598d8c": "52f598d8c",
				"01a1ffd3-2797-7eef-b460-c7c42f598d8c": "c42f598d8c",
			}},
		{"none", nil, map[string]string{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ShortIDs(tt.ids); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ShortIDs(%q) = %v; want %v", tt.ids, got, tt.want)
			}
		})
	}
	if got := ShortID("01a1ffd2-2797-7eef-b460-c7d42f598d8c"); got != "2f598d8c" {
		t.Errorf("ShortID = %q", got)
	}
}
