package perftrace

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTracer_Summary(t *testing.T) {
	dir := t.TempDir()
	perf := `
 Summary of events:

 knotd (18080), 118848 events, 16.5%

   syscall            calls  errors  total       min       avg       max       stddev
                                     (msec)    (msec)    (msec)    (msec)        (%)
   --------------- --------  ------ -------- --------- --------- ---------     ------
   futex               4811    383 15195.515     0.000     3.158   660.132     11.13%
   fdatasync           1692      0  1252.024     0.089     0.740    21.843      3.73%
   fsync                927      0  1047.007     0.084     1.129    26.306      4.54%

 knotd (18081), 147007 events, 20.4%

   syscall            calls  errors  total       min       avg       max       stddev
                                     (msec)    (msec)    (msec)    (msec)        (%)
   --------------- --------  ------ -------- --------- --------- ---------     ------
   fdatasync           2225      0  1482.859     0.089     0.666    11.718      2.91%
   openat              3459    353   732.642     0.013     0.212     4.593      3.40%
`
	for i, name := range []string{"syscalls-1.txt", "syscalls-2.txt"} {
		body := perf
		if i == 1 {
			body = "\n knotd (1), 3 events\n   fsync 3 0 3.000 1 1 1 0%\n"
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tr := &Tracer{Dir: dir, Runs: 1000}
	got, err := tr.summary(2)
	if err != nil {
		t.Fatal(err)
	}
	want := []syscallStat{{"fdatasync", 1692 + 2225, 1252.024 + 1482.859}, {"fsync", 930, 1050.007}}
	if len(got) != 2 || got[0].name != want[0].name || got[0].calls != want[0].calls || got[1].name != want[1].name || got[1].calls != want[1].calls {
		t.Errorf("summary(2) = %+v; want %+v (futex left out, threads and files merged)", got, want)
	}
	if lines := tr.Table(); len(lines) != 5+3 || lines[5] != "| fdatasync | 3917 | 3.92 | 2735 | 2.73 |" {
		t.Errorf("syscallTable() = %q", lines)
	}
}
