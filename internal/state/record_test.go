package state

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDecodeRecord_RoundTrip(t *testing.T) {
	for _, r := range []Record{
		{Path: "a.md"},
		rec("ideas/plan.md", "x"),
		{Path: "b.md", Stamp: Stamp{Size: 1 << 40, ModTime: -1, Inode: ^uint64(0), Device: 1}, Turns: 1 << 30, LastOutcome: OutcomeSkipped},
		{Path: "c.md", Resume: "thread", Totals: &Usage{InputTokens: 600, OutputTokens: 27, CacheReadTokens: 5, CacheWriteTokens: 1, CostUSD: 0.0004}},
		{Path: "d.md", Totals: &Usage{}},
		{Path: "e.md", Wrote: []Hash{HashOf([]byte("one")), HashOf([]byte("two"))}},
		{Path: "f.md", Totals: &Usage{CostUSD: 2}, Wrote: []Hash{HashOf([]byte("one"))}},
		{Path: "g.md", Resume: "h", Agent: "claude\x00claude", ContextTokens: 172_000, ContextWindow: 1 << 20},
	} {
		b := appendRecord(nil, &r)
		got, err := decodeRecord(r.Path, b)
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Errorf("decodeRecord(appendRecord(%+v)) = %+v, %v; want the record", r, got, err)
		}
	}
}

func TestDecodeRecord_Refuses(t *testing.T) {
	good := appendRecord(nil, new(rec("a.md", "x")))
	// v5tail is the encoding of a zero agent and context, last.
	const v5tail = 3
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"newer version", append([]byte{recordVersion + 1}, good[1:]...)},
		{"truncated", good[:len(good)-1]},
		{"trailing bytes", append(append([]byte(nil), good...), 0)},
		{"bad outcome", func() []byte { r := rec("a.md", "x"); r.LastOutcome = outcomeEnd; return appendRecord(nil, &r) }()},
		{"bad totals flag", append(append([]byte(nil), good[:len(good)-2-v5tail]...), 2, 0, 0, 0, 0)},
		{"negative context", func() []byte { r := rec("a.md", "x"); r.ContextTokens = -1; return appendRecord(nil, &r) }()},
		{"truncated agent", func() []byte {
			r := rec("a.md", "x")
			r.Agent = "claude"
			b := appendRecord(nil, &r)
			return b[:len(b)-4]
		}()},
		{"truncated totals", func() []byte {
			r := rec("a.md", "x")
			r.Totals = &Usage{CostUSD: 1}
			b := appendRecord(nil, &r)
			return b[:len(b)-4]
		}()},
		{"too many writes", func() []byte {
			b := appendRecord(nil, new(rec("a.md", "x")))
			b = append(b[:len(b)-1-v5tail], MaxWrote+1)
			for range MaxWrote + 1 {
				b = append(b, make([]byte, len(Hash{}))...)
			}
			return append(b, 0, 0, 0)
		}()},
		{"truncated writes", func() []byte {
			r := rec("a.md", "x")
			r.Wrote = []Hash{HashOf([]byte("one"))}
			b := appendRecord(nil, &r)
			return append(b[:len(b)-1-v5tail], 0, 0, 0)
		}()},
	}
	for _, tt := range tests {
		if _, err := decodeRecord("a.md", tt.b); !errors.Is(err, errCorruptValue) {
			t.Errorf("decodeRecord(%s) = %v; want errCorruptValue", tt.name, err)
		}
	}
}

// TestRecord_AddWrote: knotd remembers its last MaxWrote writes of a
// strand, each once, oldest forgotten first, without touching the slice
// of a record it was copied from.
func TestRecord_AddWrote(t *testing.T) {
	var r Record
	h := func(i int) Hash { return HashOf([]byte{byte(i)}) }
	for i := range MaxWrote + 3 {
		r.AddWrote(h(i))
		r.AddWrote(h(i)) // twice: kept once
	}
	if len(r.Wrote) != MaxWrote || r.Wrote[0] != h(3) || r.Wrote[MaxWrote-1] != h(MaxWrote+2) {
		t.Fatalf("Wrote = %d hashes, first %v; want the last %d, oldest first", len(r.Wrote), r.Wrote[0], MaxWrote)
	}
	if r.HasWrote(h(2)) || !r.HasWrote(h(3)) {
		t.Error("HasWrote: want the oldest forgotten, the others kept")
	}
	c := r
	c.AddWrote(h(100))
	if r.HasWrote(h(100)) || r.Wrote[0] != h(3) {
		t.Error("AddWrote on a copy changed the original record")
	}
}

// TestDecodeRecord_Version1: records written before stamps had a change
// time read with a zero one, and without totals; so do version 2's.
// Versions 1 to 3 read without knotd's writes.
func TestDecodeRecord_Version1(t *testing.T) {
	r := rec("a.md", "x")
	r.Stamp = Stamp{Size: 3, ModTime: 42, Inode: 7, Device: 9}
	v5 := appendRecord(nil, &r)
	// Version 4 is version 5 without the agent and the context (an
	// empty string and two 0 varints, last).
	v4 := append([]byte{recordVersionV4}, v5[1:len(v5)-3]...)
	if got, err := decodeRecord("a.md", v4); err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("decodeRecord(version 4) = %+v, %v; want %+v", got, err, r)
	}
	// Version 3 is version 4 without knotd's writes (a 0 count, last).
	v3 := append([]byte{recordVersionV3}, v4[1:len(v4)-1]...)
	if got, err := decodeRecord("a.md", v3); err != nil || !reflect.DeepEqual(got, r) {
		t.Errorf("decodeRecord(version 3) = %+v, %v; want %+v", got, err, r)
	}
	// Version 2 is version 3 without the totals (a 0 flag byte, last).
	v2 := append([]byte{recordVersionV2}, v3[1:len(v3)-1]...)
	if got, err := decodeRecord("a.md", v2); err != nil || got.Stamp != r.Stamp || got.Totals != nil || got.Processed != r.Processed {
		t.Errorf("decodeRecord(version 2) = %+v, %v; want %+v", got, err, r)
	}
	// Version 1 is version 2 without the change time (one varint, 0).
	v1 := append([]byte{recordVersionV1}, v2[1:]...)
	i := 1
	for range 4 { // size, mtime, inode, device
		_, n := binary.Uvarint(v1[i:])
		i += n
	}
	v1 = append(v1[:i:i], v1[i+1:]...)
	got, err := decodeRecord("a.md", v1)
	if err != nil || got.Stamp != r.Stamp || got.Hash != r.Hash || got.Session != r.Session {
		t.Errorf("decodeRecord(version 1) = %+v, %v; want %+v", got, err, r)
	}
}

func TestStampOf(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.md")
	require.NoError(t, os.WriteFile(p, []byte("hello"), 0o600))
	fi, err := os.Lstat(p)
	require.NoError(t, err)
	st := StampOf(fi)
	if st.Size != 5 || st.ModTime != fi.ModTime().UnixNano() {
		t.Errorf("StampOf = %+v; want size 5 and mtime %d", st, fi.ModTime().UnixNano())
	}
	// Renaming keeps the inode; replacing the file (a new inode) changes
	// the stamp even with the same size and mtime.
	q := filepath.Join(dir, "b.md")
	require.NoError(t, os.Rename(p, q))
	fi2, err := os.Lstat(q)
	require.NoError(t, err)
	if got := StampOf(fi2); got.Size != st.Size || got.ModTime != st.ModTime || got.Inode != st.Inode || got.Device != st.Device {
		t.Errorf("StampOf after rename = %+v; want %+v (the change time aside)", got, st)
	}
	// An in-place edit of the same size whose writer puts the
	// modification time back (touch -r, rsync -t) changes the stamp: its
	// change time moved.
	if st.Ctime != 0 {
		require.NoError(t, os.WriteFile(q, []byte("HELLO"), 0o600))
		require.NoError(t, os.Chtimes(q, fi.ModTime(), fi.ModTime()))
		fi4, err := os.Lstat(q)
		require.NoError(t, err)
		if got := StampOf(fi4); got == StampOf(fi2) || got.ModTime != st.ModTime {
			t.Errorf("StampOf after a same-size edit with the time put back = %+v; want it to differ from %+v", got, StampOf(fi2))
		}
	}
	if st.Inode == 0 {
		return // no inodes on this platform
	}
	require.NoError(t, os.WriteFile(p, []byte("hello"), 0o600))
	require.NoError(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
	fi3, err := os.Lstat(p)
	require.NoError(t, err)
	if got := StampOf(fi3); got == st {
		t.Errorf("StampOf(new file, same size and mtime) = %+v; want a different inode", got)
	}
}

func TestOutcome_String(t *testing.T) {
	tests := map[Outcome]string{OutcomeNone: "none", OutcomeAdopted: "adopted", OutcomeSucceeded: "succeeded",
		OutcomeFailed: "failed", OutcomeSkipped: "skipped", 77: "Outcome(77)"}
	for o, want := range tests {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d).String() = %q; want %q", uint8(o), got, want)
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(appendRecord(nil, new(rec("a.md", "x"))))
	f.Add(appendRecord(nil, &Record{}))
	f.Add([]byte{recordVersion, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord("a.md", b)
		if err != nil {
			return
		}
		again, err := decodeRecord("a.md", appendRecord(nil, &r))
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Errorf("decodeRecord(appendRecord(decodeRecord(%q))) = %+v, %v; want %+v", b, again, err, r)
		}
	})
}

// BenchmarkRecordCodec compares the binary encoding with JSON, the obvious
// alternative, on a typical record.
func BenchmarkRecordCodec(b *testing.B) {
	r := rec("projects/2026/ideas/plan.md", "x")
	r.Processed = time.Now().UTC()
	b.Run("binary", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = appendRecord(buf[:0], &r)
			if _, err := decodeRecord(r.Path, buf); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(buf)), "bytes/record")
	})
	b.Run("json", func(b *testing.B) {
		var n int
		for b.Loop() {
			buf, err := json.Marshal(&r)
			require.NoError(b, err)
			var got Record
			require.NoError(b, json.Unmarshal(buf, &got))
			n = len(buf)
		}
		b.ReportMetric(float64(n), "bytes/record")
	})
}
