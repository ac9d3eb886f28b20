package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRun_StampsItsStart(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string // the stamp line after the time
	}{
		{"knotd", map[string]string{"KNOT_STRAND": "a/b.md", "KNOT_EVENT": "Modified", "KNOT_RUN_ID": "r1"}, []string{"-no-stdin"}, "a/b.md Modified r1"},
		{"peer passes the path", map[string]string{"KNOT_STRAND": "", "KNOT_EVENT": "", "KNOT_RUN_ID": ""}, []string{"-no-stdin", "/v/c.md"}, "/v/c.md - -"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stamps := filepath.Join(t.TempDir(), "stamps")
			t.Setenv("BENCH_STAMPS", stamps)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			start := time.Unix(0, 1234567890)
			for range 2 {
				if err := run(start, tt.args); err != nil {
					t.Fatal(err)
				}
			}
			b, err := os.ReadFile(stamps)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Repeat(strconv.FormatInt(start.UnixNano(), 10)+" "+tt.want+"\n", 2)
			if string(b) != want {
				t.Errorf("stamps = %q; want %q", b, want)
			}
		})
	}
}

func TestRun_UnwritableStamps(t *testing.T) {
	t.Setenv("BENCH_STAMPS", filepath.Join(t.TempDir(), "missing", "stamps"))
	if err := run(time.Now(), []string{"-no-stdin", "x.md"}); err == nil {
		t.Error("run with an unwritable stamps file succeeded; want an error")
	}
}
