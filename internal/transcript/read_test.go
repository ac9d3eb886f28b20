package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// line returns a transcript line of run testRunID.
func line(seq int, typ string) string {
	return `{"seq":` + itoa(seq) + `,"run_id":"` + testRunID + `","type":"` + typ + `","time":"2026-11-21T19:30:05Z","data":{}}` + "\n"
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestRead_Tolerates(t *testing.T) {
	l1, l2, l3 := line(1, "run.started"), line(2, "message.user"), line(3, "run.finished")
	type warn struct {
		line int
		torn bool
		has  string
	}
	for _, tc := range []struct {
		name  string
		in    string
		seqs  []int64
		warns []warn
	}{
		{"empty", "", nil, nil},
		{"whole", l1 + l2 + l3, []int64{1, 2, 3}, nil},
		{"torn last line", l1 + l2 + l3[:30], []int64{1, 2}, []warn{{3, true, "torn"}}},
		{"last line without newline", l1 + l2 + strings.TrimSuffix(l3, "\n"), []int64{1, 2}, []warn{{3, true, "torn"}}},
		{"garbage line", l1 + "garbage\n" + l3, []int64{1, 3}, []warn{{2, false, "not a transcript event"}}},
		{"empty line", l1 + "\n" + l2, []int64{1, 2}, []warn{{2, false, "empty line"}}},
		{"seq repeats", l1 + l2 + l2, []int64{1, 2, 2}, []warn{{3, false, "seq 2 does not follow seq 2"}}},
		{"other run", l1 + strings.Replace(l2, testRunID, testRunID2, 1), []int64{1, 2}, []warn{{2, false, "differs from"}}},
		{"zero seq", strings.Replace(l1, `"seq":1`, `"seq":0`, 1), nil, []warn{{1, false, "seq 0"}}},
		{"no type", strings.Replace(l1, `"type":"run.started"`, `"kind":"x"`, 1), nil, []warn{{1, false, "no type"}}},
		{"no run id", strings.Replace(l1, `"run_id"`, `"run"`, 1), nil, []warn{{1, false, "no run id"}}},
		{"not an object", "[1,2]\n" + l2, []int64{2}, []warn{{1, false, "not a transcript event"}}},
		{"crlf", strings.ReplaceAll(l1+l2, "\n", "\r\n"), []int64{1, 2}, nil},
		{"unknown envelope fields", strings.Replace(l1, `{"seq"`, `{"v":2,"seq"`, 1), []int64{1}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs, warns, err := Read(strings.NewReader(tc.in))
			if err != nil {
				t.Fatalf("Read = %v", err)
			}
			var seqs []int64
			for _, ev := range evs {
				seqs = append(seqs, ev.Seq)
			}
			if !equalInts(seqs, tc.seqs) {
				t.Errorf("Read(%q) seqs = %v; want %v", tc.in, seqs, tc.seqs)
			}
			if len(warns) != len(tc.warns) {
				t.Fatalf("Read(%q) warnings = %v; want %d", tc.in, warns, len(tc.warns))
			}
			for i, w := range tc.warns {
				g := warns[i]
				if g.Line != w.line || g.Torn != w.torn || !strings.Contains(g.String(), w.has) {
					t.Errorf("Read(%q) warning %d = %+v; want line %d torn %v containing %q", tc.in, i, g, w.line, w.torn, w.has)
				}
			}
		})
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRead_LongLineSkipped(t *testing.T) {
	long := `{"seq":2,"run_id":"r","type":"message.user","data":{"prompt":"` + strings.Repeat("x", 200<<10) + `"}}` + "\n"
	in := line(1, "run.started") + long + line(3, "run.finished")
	evs, warns, err := read(strings.NewReader(in), 100<<10)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[1].Seq != 3 || len(warns) != 1 || warns[0].Line != 2 || !strings.Contains(warns[0].Problem, "longer") {
		t.Errorf("read with a long line = %d events, %v", len(evs), warns)
	}
	if warns[0].Offset != int64(len(line(1, "run.started"))) {
		t.Errorf("warning offset = %d; want %d", warns[0].Offset, len(line(1, "run.started")))
	}
	// The same line fits under MaxLine.
	if evs, warns, _ := Read(strings.NewReader(in)); len(evs) != 3 || len(warns) != 1 {
		t.Errorf("Read = %d events, %v; want 3 events and the run id warning", len(evs), warns)
	}
}

func TestRead_UnknownTypesRoundTrip(t *testing.T) {
	in := line(1, "run.started") +
		`{"seq":2,"run_id":"` + testRunID + `","type":"tool.progress","time":"2026-11-21T19:30:05.5+01:00","data":{"percent":50,"note":"<b>é</b> & \"q\"","nested":{"a":[1,2.5,null,true]}}}` + "\n" +
		`{"seq":3,"run_id":"` + testRunID + `","type":"x.y","time":"2026-11-21T19:30:06Z"}` + "\n" +
		`{"seq":4,"run_id":"` + testRunID + `","type":"z","time":"2026-11-21T19:30:07Z","data":"a string payload"}` + "\n"
	evs, warns, err := Read(strings.NewReader(in))
	if err != nil || len(warns) != 0 || len(evs) != 4 {
		t.Fatalf("Read = %d events, %v, %v", len(evs), warns, err)
	}
	var out bytes.Buffer
	for _, ev := range evs {
		l, err := ev.MarshalLine()
		if err != nil {
			t.Fatal(err)
		}
		out.Write(l)
	}
	if out.String() != in {
		t.Errorf("round trip:\n got %s\nwant %s", out.String(), in)
	}
	for _, ev := range evs[1:] {
		if p, err := ev.Payload(); !errors.Is(err, ErrUnknownType) || p != nil {
			t.Errorf("Payload(%s) = %v, %v; want ErrUnknownType", ev.Type, p, err)
		}
		if ev.Type.Known() {
			t.Errorf("%s.Known() = true", ev.Type)
		}
	}
}

func TestType_Known(t *testing.T) {
	for _, typ := range Types {
		if !typ.Known() {
			t.Errorf("%s.Known() = false", typ)
		}
	}
}

func TestEvent_PayloadDecodeError(t *testing.T) {
	for _, typ := range Types {
		ev := Event{Seq: 1, Type: typ, Data: json.RawMessage(`[]`)}
		if _, err := ev.Payload(); err == nil || errors.Is(err, ErrUnknownType) {
			t.Errorf("Payload(%s with an array) = %v; want a decoding error", typ, err)
		}
	}
}

type failingReader struct{ r io.Reader }

func (f failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, errors.New("disk on fire")
	}
	return n, err
}

func TestRead_ReaderError(t *testing.T) {
	evs, _, err := Read(failingReader{strings.NewReader(line(1, "run.started") + line(2, "x"))})
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("Read = %v; want the reader's error", err)
	}
	if len(evs) != 2 {
		t.Errorf("Read returned %d events with the error; want the 2 read before it", len(evs))
	}
}

func TestReadFile_Refuses(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.jsonl")
	if err := os.WriteFile(target, []byte(line(1, "run.started")), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{"missing": filepath.Join(dir, "missing.jsonl"), "directory": dir}
	if runtime.GOOS != "windows" {
		link := filepath.Join(dir, "link.jsonl")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		cases["symlink"] = link
	}
	for name, path := range cases {
		t.Run(name, func(t *testing.T) {
			if _, _, err := ReadFile(path); err == nil {
				t.Errorf("ReadFile(%s) = nil error", path)
			}
		})
	}
	if _, _, err := ReadFile(filepath.Join(dir, "missing.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v; want ErrNotExist", err)
	}
}

func FuzzRead(f *testing.F) {
	golden, err := os.ReadFile(filepath.Join("testdata", "transcript.golden"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden)
	f.Add(golden[:len(golden)/2])
	f.Add([]byte(line(1, "run.started") + "garbage\n\n" + line(1, "x")))
	f.Add([]byte(`{"seq":1,"run_id":"r","type":"t","time":"2026-11-21T19:30:05Z","data":null}` + "\n"))
	f.Add([]byte("\xff\xfe{\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		evs, warns, err := read(bytes.NewReader(in), 4<<10)
		if err != nil {
			t.Fatalf("Read = %v", err)
		}
		for _, w := range warns {
			if w.Line < 1 || w.Offset < 0 || w.Offset > int64(len(in)) || w.Problem == "" {
				t.Errorf("bad warning %+v", w)
			}
		}
		for _, ev := range evs {
			if ev.Seq < 1 || ev.Type == "" || ev.RunID == "" {
				t.Fatalf("Read accepted %+v", ev)
			}
			l, err := ev.MarshalLine()
			if err != nil {
				t.Fatalf("MarshalLine(%+v) = %v", ev, err)
			}
			again, w2, err := Read(bytes.NewReader(l))
			if err != nil || len(w2) != 0 || len(again) != 1 {
				t.Fatalf("Read(MarshalLine) = %v, %v, %v", again, w2, err)
			}
			a := again[0]
			if a.Seq != ev.Seq || a.RunID != ev.RunID || a.Type != ev.Type || !a.Time.Equal(ev.Time) || !bytes.Equal(compact(a.Data), compact(ev.Data)) {
				t.Fatalf("round trip changed %+v into %+v", ev, a)
			}
			_, _ = ev.Payload() // must not panic
		}
		var buf bytes.Buffer
		if err := Render(&buf, evs); err != nil {
			t.Fatalf("Render = %v", err)
		}
	})
}

// compact returns valid JSON without insignificant space.
func compact(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}
