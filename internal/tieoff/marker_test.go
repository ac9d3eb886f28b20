package tieoff

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/knotd/knotd/internal/question"
	"github.com/knotd/knotd/internal/strand"
)

const testRun = "0190f3c2-7b1a-7c3d-9e2f-1a2b3c4d5e6f"

// TestParseMarker reads run marker lines of every form knotd wrote or may
// write, and lines that only look like one.
func TestParseMarker(t *testing.T) {
	const id, h, sess = testRun, testHash, testSession
	tests := []struct {
		name string
		line string
		want marker
		bad  bool
	}{
		// The forms older knotd versions wrote.
		{name: "id only", line: "<!-- knot:run " + id + " -->", want: marker{id: id, size: -1}},
		{name: "id and bytes", line: "<!-- knot:run " + id + " bytes=1234 -->", want: marker{id: id, size: 1234}},
		// The form Format writes now.
		{name: "all fields", line: "<!-- knot:run " + id + " bytes=12 sha256=" + h + " session=" + sess + " -->", want: marker{id: id, size: 12, hash: h, session: sess}},
		{name: "hash only", line: "<!-- knot:run " + id + " bytes=0 sha256=" + h + " -->", want: marker{id: id, size: 0, hash: h}},
		{name: "session only", line: "<!-- knot:run " + id + " bytes=7 session=" + sess + " -->", want: marker{id: id, size: 7, session: sess}},
		// What a newer knotd, or a hand, may write.
		{name: "fields reordered", line: "<!-- knot:run " + id + " session=" + sess + " sha256=" + h + " bytes=12 -->", want: marker{id: id, size: 12, hash: h, session: sess}},
		{name: "no bytes", line: "<!-- knot:run " + id + " sha256=" + h + " -->", want: marker{id: id, size: -1, hash: h}},
		{name: "unknown key", line: "<!-- knot:run " + id + " bytes=12 agent=claude sha256=" + h + " -->", want: marker{id: id, size: 12, hash: h}},
		{name: "unknown keys with odd values", line: "<!-- knot:run " + id + " x= y.z=a=b Bytes=no -->", want: marker{id: id, size: -1}},
		{name: "blanks around", line: " \t<!-- knot:run  " + id + "\tbytes=3   -->\r", want: marker{id: id, size: 3}},
		{name: "session of one byte", line: "<!-- knot:run r session=s -->", want: marker{id: "r", size: -1, session: "s"}},
		{name: "session of the longest", line: "<!-- knot:run r session=" + strings.Repeat("s", maxSessionLen) + " -->", want: marker{id: "r", size: -1, session: strings.Repeat("s", maxSessionLen)}},

		{name: "question", line: "<!-- knot:run r bytes=3 question=3f9a2c1b call=" + testCall + " -->", want: marker{id: "r", size: 3, question: "3f9a2c1b", call: testCall}},
		{name: "answer", line: "<!-- knot:run r verdict=deny question=3f9a2c1b -->", want: marker{id: "r", size: -1, question: "3f9a2c1b", verdict: "deny"}},
		{name: "question id short", line: "<!-- knot:run r question=3f9a2c1 -->", bad: true},
		{name: "question id upper case", line: "<!-- knot:run r question=3F9A2C1B -->", bad: true},
		{name: "empty question id", line: "<!-- knot:run r question= -->", bad: true},
		{name: "call short", line: "<!-- knot:run r call=" + testCall[:63] + " -->", bad: true},
		{name: "unknown verdict", line: "<!-- knot:run r verdict=approved -->", bad: true},
		{name: "verdict upper case", line: "<!-- knot:run r verdict=Approve -->", bad: true},
		{name: "duplicate verdict", line: "<!-- knot:run r verdict=deny verdict=deny -->", bad: true},
		{name: "due", line: "<!-- knot:run r bytes=3 due=1795849200 -->", want: marker{id: "r", size: 3, due: time.Unix(1795849200, 0).UTC()}},
		{name: "due zero", line: "<!-- knot:run r due=0 -->", bad: true},
		{name: "due negative", line: "<!-- knot:run r due=-5 -->", bad: true},
		{name: "due with a sign", line: "<!-- knot:run r due=+5 -->", bad: true},
		{name: "due as a date", line: "<!-- knot:run r due=2026-11-21T07:00:00Z -->", bad: true},
		{name: "due past year 9999", line: "<!-- knot:run r due=253402300800 -->", bad: true},
		{name: "duplicate due", line: "<!-- knot:run r due=5 due=5 -->", bad: true},
		{name: "duplicate bytes", line: "<!-- knot:run " + id + " bytes=12 bytes=12 -->", bad: true},
		{name: "duplicate hash", line: "<!-- knot:run " + id + " sha256=" + h + " sha256=" + h + " -->", bad: true},
		{name: "duplicate session", line: "<!-- knot:run " + id + " session=a session=b -->", bad: true},
		{name: "duplicate unknown key", line: "<!-- knot:run " + id + " agent=a agent=b -->", bad: true},
		{name: "bad hex", line: "<!-- knot:run " + id + " sha256=" + "z" + h[1:] + " -->", bad: true},
		{name: "upper-case hex", line: "<!-- knot:run " + id + " sha256=" + strings.ToUpper(h) + " -->", bad: true},
		{name: "short hex", line: "<!-- knot:run " + id + " sha256=" + h[:63] + " -->", bad: true},
		{name: "long hex", line: "<!-- knot:run " + id + " sha256=" + h + "0 -->", bad: true},
		{name: "empty hash", line: "<!-- knot:run " + id + " sha256= -->", bad: true},
		{name: "session with a slash", line: "<!-- knot:run " + id + " session=a/b -->", bad: true},
		{name: "session not ASCII", line: "<!-- knot:run " + id + " session=ä -->", bad: true},
		{name: "session with a colon", line: "<!-- knot:run " + id + " session=a:b -->", bad: true},
		{name: "session too long", line: "<!-- knot:run r session=" + strings.Repeat("s", maxSessionLen+1) + " -->", bad: true},
		{name: "empty session", line: "<!-- knot:run " + id + " session= -->", bad: true},
		{name: "bytes not a number", line: "<!-- knot:run " + id + " bytes=x -->", bad: true},
		{name: "bytes negative", line: "<!-- knot:run " + id + " bytes=-1 -->", bad: true},
		{name: "bytes with a sign", line: "<!-- knot:run " + id + " bytes=+1 -->", bad: true},
		{name: "bytes overflow", line: "<!-- knot:run " + id + " bytes=99999999999999999999 -->", bad: true},
		{name: "field without a value", line: "<!-- knot:run " + id + " bytes -->", bad: true},
		{name: "field without a key", line: "<!-- knot:run " + id + " =5 -->", bad: true},
		{name: "key with a bad character", line: "<!-- knot:run " + id + " a/b=5 -->", bad: true},
		{name: "no run id", line: "<!-- knot:run -->", bad: true},
		{name: "a field for a run id", line: "<!-- knot:run bytes=5 -->", bad: true},
		{name: "bad run id", line: "<!-- knot:run a/b bytes=5 -->", bad: true},
		{name: "not closed", line: "<!-- knot:run " + id + " bytes=5", bad: true},
		{name: "other kind", line: "<!-- knot:note " + id + " -->", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMarker([]byte(tt.line))
			if tt.bad {
				if err == nil {
					t.Fatalf("parseMarker(%q) = %+v; want malformed", tt.line, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseMarker(%q) = %+v, %v; want %+v", tt.line, got, err, tt.want)
			}
			if got.size < 0 {
				return
			}
			// What was read, written again, reads the same.
			again, err := parseMarker([]byte(formatMarker(got)))
			if err != nil || again != got {
				t.Errorf("parseMarker(formatMarker(%+v)) = %+v, %v", got, again, err)
			}
		})
	}
}

// TestFormat_Marker: the marker is written exactly so, its fields always in
// the same order, and Parse gives every field back.
func TestFormat_Marker(t *testing.T) {
	tests := []struct {
		name          string
		hash, session string
		marker        string
	}{
		{"neither", "", "", "<!-- knot:run " + testRun + " bytes=7 -->"},
		{"hash", testHash, "", "<!-- knot:run " + testRun + " bytes=7 sha256=" + testHash + " -->"},
		{"session", "", testSession, "<!-- knot:run " + testRun + " bytes=7 session=" + testSession + " -->"},
		{"both", testHash, testSession, "<!-- knot:run " + testRun + " bytes=7 sha256=" + testHash + " session=" + testSession + " -->"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mkSection(0, strand.Modified, "n.md", "Reply.")
			s.RunID, s.Hash, s.Session = testRun, tt.hash, tt.session
			b := mustFormat(t, s)
			want := "## Event: Modified\n## Strand: n.md\n## Timestamp: 2026-11-21T19:30:05Z\n" + tt.marker + "\n---\n\nReply.\n"
			if string(b) != want {
				t.Fatalf("Format = %q; want %q", b, want)
			}
			secs, probs := Parse(b)
			if len(secs) != 1 || len(probs) > 0 {
				t.Fatalf("Parse = %d sections, %s", len(secs), problemsString(probs))
			}
			if err := sameSection(secs[0], written(s)); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestParse_MarkerFields: Parse and HasRun read markers with reordered and
// unknown fields, and a malformed one is a problem that leaves the section
// without run id, hash or session.
func TestParse_MarkerFields(t *testing.T) {
	head := "## Event: Modified\n## Strand: n.md\n## Timestamp: 2026-11-21T19:30:05Z\n"
	doc := head + "<!-- knot:run r1 future=1 session=" + testSession + " bytes=7 sha256=" + testHash + " -->\n---\n\nReply.\n"
	secs, probs := Parse([]byte(doc))
	if len(secs) != 1 || len(probs) > 0 {
		t.Fatalf("Parse = %d sections, %s", len(secs), problemsString(probs))
	}
	if s := secs[0]; s.RunID != "r1" || s.Hash != testHash || s.Session != testSession || s.Torn {
		t.Errorf("Parse = %+v", s)
	}
	// The recorded length still tells a torn section.
	if secs, _ := Parse([]byte(doc[:len(doc)-3])); len(secs) != 1 || !secs[0].Torn {
		t.Errorf("Parse(cut) = %+v; want the section Torn", secs)
	}
	bad := strings.Replace(doc, "session=", "session=é", 1)
	secs, probs = Parse([]byte(bad))
	if len(secs) != 1 || len(probs) != 1 || probs[0].Line != 4 {
		t.Fatalf("Parse(bad session) = %d sections, %s; want one problem on line 4", len(secs), problemsString(probs))
	}
	if s := secs[0]; s.RunID != "" || s.Hash != "" || s.Session != "" {
		t.Errorf("Parse(bad session) = %+v; want no run id, hash or session", s)
	}

	root, dir := testVault(t)
	writeFile(t, filepath.Join(dir, "n.tieoff.md"), doc)
	if ok, err := HasRun(root, "n.tieoff.md", "r1", 0); !ok || err != nil {
		t.Errorf("HasRun(reordered marker) = %v, %v; want true", ok, err)
	}
	writeFile(t, filepath.Join(dir, "n.tieoff.md"), doc[:len(doc)-3])
	if ok, err := HasRun(root, "n.tieoff.md", "r1", 0); ok || err == nil {
		t.Errorf("HasRun(cut, reordered marker) = %v, %v; want ErrTorn", ok, err)
	}
	writeFile(t, filepath.Join(dir, "n.tieoff.md"), bad)
	if ok, err := HasRun(root, "n.tieoff.md", "r1", 0); ok || err != nil {
		t.Errorf("HasRun(malformed marker) = %v, %v; want false", ok, err)
	}
}

// FuzzMarker feeds arbitrary lines to parseMarker: it never panics, what
// it accepts obeys Format's rules, and written again reads the same.
func FuzzMarker(f *testing.F) {
	f.Add("<!-- knot:run " + testRun + " -->")
	f.Add("<!-- knot:run " + testRun + " bytes=12 -->")
	f.Add("<!-- knot:run " + testRun + " bytes=12 sha256=" + testHash + " session=" + testSession + " -->")
	f.Add("<!-- knot:run r session=s sha256=" + testHash + " x=y bytes=0 -->")
	f.Add("<!-- knot:run r bytes=1 bytes=2 -->")
	f.Add("<!-- knot:run r =x -->")
	f.Add("<!-- knot:run r bytes=3 question=3f9a2c1b call=" + testCall + " -->")
	f.Add("<!-- knot:run r verdict=withdraw question=3f9a2c1b -->")
	f.Add("<!-- knot:run r question=3F9A2C1B verdict=approved -->")
	f.Fuzz(func(t *testing.T, line string) {
		m, err := parseMarker([]byte(line))
		if err != nil {
			return
		}
		if validRunID(m.id, false) != nil || m.hash != "" && !validHash(m.hash) ||
			m.session != "" && validToken("session", m.session, maxSessionLen) != nil || m.size < -1 ||
			m.question != "" && !question.ValidID(m.question) || m.call != "" && !validHash(m.call) ||
			m.verdict != "" && statusOfVerdict[m.verdict] == "" {
			t.Fatalf("parseMarker(%q) accepted %+v", line, m)
		}
		if m.size < 0 {
			m.size = 0
		}
		again, err := parseMarker([]byte(formatMarker(m)))
		if err != nil || again != m {
			t.Fatalf("parseMarker(formatMarker(%+v)) = %+v, %v", m, again, err)
		}
	})
}

// TestFormat_Scheduled: a Scheduled section records the occurrence it stands
// for in its marker (due=), Parse gives it back, and a due time on any other
// event, or on a marker of a section that is not Scheduled, is refused or
// reported.
func TestFormat_Scheduled(t *testing.T) {
	due := time.Date(2026, 11, 27, 6, 0, 0, 0, time.UTC)
	s := mkSection(0, strand.Scheduled, "n.md", "Brief.")
	s.RunID, s.Hash, s.Due = testRun, testHash, due
	b := mustFormat(t, s)
	want := "## Event: Scheduled\n## Strand: n.md\n## Timestamp: 2026-11-21T19:30:05Z\n<!-- knot:run " + testRun + " bytes=7 sha256=" + testHash + " due=1795759200 -->\n---\n\nBrief.\n"
	if string(b) != want {
		t.Fatalf("Format = %q; want %q", b, want)
	}
	secs, probs := Parse(b)
	if len(secs) != 1 || len(probs) > 0 {
		t.Fatalf("Parse = %d sections, %s", len(secs), problemsString(probs))
	}
	if !secs[0].Due.Equal(due) || secs[0].Event != strand.Scheduled {
		t.Errorf("Parse = %+v; want Scheduled, due %v", secs[0], due)
	}
	if err := sameSection(secs[0], written(s)); err != nil {
		t.Error(err)
	}

	m := mkSection(0, strand.Modified, "n.md", "Reply.")
	m.RunID, m.Due = testRun, due
	if _, err := Format(m); err == nil {
		t.Error("Format(Modified with a due time) succeeded")
	}
	noRun := mkSection(0, strand.Scheduled, "n.md", "Reply.")
	noRun.RunID, noRun.Due = "", due
	if _, err := Format(noRun); err == nil {
		t.Error("Format(due time without a run id) succeeded")
	}
	forged := strings.Replace(string(b), "Event: Scheduled", "Event: Modified", 1)
	secs, probs = Parse([]byte(forged))
	if len(secs) != 1 || len(probs) != 1 || !secs[0].Due.IsZero() {
		t.Errorf("Parse(due on a Modified section) = %+v, %s; want no due and one problem", secs, problemsString(probs))
	}
}
