package state

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"time"
)

// Hash is the SHA-256 of a strand's content.
type Hash [sha256.Size]byte

// HashOf returns the SHA-256 of b.
func HashOf(b []byte) Hash { return sha256.Sum256(b) }

// String returns the hash in lower-case hex.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// Stamp is the cheap identity of one version of a file: what reconcile
// compares with a Record before it reads and hashes the file. Equal stamps
// mean "almost certainly unchanged"; different stamps mean "read and hash
// to find out" (a touch changes the stamp but not the content).
type Stamp struct {
	Size int64
	// ModTime is the modification time in nanoseconds since the Unix epoch.
	ModTime int64
	// Inode and Device identify the file on Unix. They are zero on
	// platforms where FileInfo does not carry them (Windows).
	Inode  uint64
	Device uint64
	// Ctime is the status change time in nanoseconds (zero where the
	// platform has none, Windows). An edit whose writer put the
	// modification time back (touch -r, rsync -t) keeps the size and the
	// time but not this.
	Ctime int64
}

// StampOf returns the stamp of the file described by info.
func StampOf(info fs.FileInfo) Stamp {
	st := Stamp{Size: info.Size(), ModTime: info.ModTime().UnixNano()}
	st.Inode, st.Device = fileID(info)
	st.Ctime = changeTime(info)
	return st
}

// Outcome is how the last run of a strand ended.
type Outcome uint8

// The outcomes a Record can carry.
const (
	// OutcomeNone: no run has happened.
	OutcomeNone Outcome = iota
	// OutcomeAdopted: recorded as processed on first contact, no run.
	OutcomeAdopted
	// OutcomeSucceeded: the agent replied and the reply was appended.
	OutcomeSucceeded
	// OutcomeFailed: the run failed and a failure section was appended.
	OutcomeFailed
	// OutcomeSkipped: processed without a run (knot_mode off, or the
	// event is not in knot_events).
	OutcomeSkipped
	outcomeEnd
)

var outcomeNames = [...]string{"none", "adopted", "succeeded", "failed", "skipped"}

// String returns the outcome's lower-case name ("succeeded").
func (o Outcome) String() string {
	if o < outcomeEnd {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Record is what knotd remembers about one strand: the version it last
// processed and the strand's session. The processed content itself is kept
// beside the record (Store.Content), not in it, so that scanning every
// record stays cheap.
type Record struct {
	// Path is the vault-relative strand path; it is the record's key.
	Path string
	// Stamp is the file's stamp when its content was processed.
	Stamp Stamp
	// Hash is the SHA-256 of the processed content.
	Hash Hash
	// Session is the strand's knot_session UUID ("" before the first run).
	Session string
	// Resume is the agent's resume handle (knot_resume), if any.
	Resume string
	// Turns counts the agent runs of this strand (the Turn of the last run).
	Turns int
	// LastRunID is the run id of the last run ("" if none).
	LastRunID string
	// LastOutcome is how the last run ended.
	LastOutcome Outcome
	// Processed is when the record was last committed.
	Processed time.Time
	// Totals is what the agent last reported as the running total of the
	// conversation Resume names, for agents that report running totals
	// rather than each turn's use (Codex CLI's tokens, Claude Code's
	// cost): the next turn's own use is its total minus this. Nil when
	// unknown.
	Totals *Usage
	// Wrote holds the hashes of the last versions of the strand that
	// knotd itself wrote into it (its knot_session), oldest first, at
	// most MaxWrote: a sync tool's conflict copy that is exactly one of
	// them is knotd's own write, which a newer save replaced.
	Wrote []Hash
	// Agent identifies the agent whose conversation answered the
	// processed version (agentrun.Agent.Identity), "" when unknown: a
	// turn of another agent does not continue that conversation.
	Agent string
	// ContextTokens is how many tokens the context of the conversation
	// Resume names held at its last turn, ContextWindow the context size
	// the agent reported; 0 when unknown.
	ContextTokens, ContextWindow int64
}

// MaxWrote bounds Record.Wrote.
const MaxWrote = 8

// AddWrote records h as a version of the strand that knotd wrote,
// forgetting the oldest beyond MaxWrote.
func (r *Record) AddWrote(h Hash) {
	if slices.Contains(r.Wrote, h) {
		return
	}
	r.Wrote = append(slices.Clone(r.Wrote), h)
	if n := len(r.Wrote); n > MaxWrote {
		r.Wrote = r.Wrote[n-MaxWrote:]
	}
}

// HasWrote reports whether knotd wrote the version of the strand whose
// hash is h (one of the last MaxWrote it wrote).
func (r *Record) HasWrote(h Hash) bool { return slices.Contains(r.Wrote, h) }

// Usage is token use and cost as an agent reported it.
type Usage struct {
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64
	CostUSD                                                      float64
}

// recordVersion is the first byte of every encoded record. Decoders read
// this version and the ones before it, and refuse newer ones, so a newer
// knotd's records are never misread. Version 1 had no Ctime (read as
// zero, which no file's stamp has: the first look hashes the file and
// restamps it); versions 1 and 2 had no Totals (read as unknown);
// versions 1 to 3 had no Wrote (read as none); versions 1 to 4 had no
// Agent and context (read as unknown).
const (
	recordVersion   = 5
	recordVersionV4 = 4
	recordVersionV3 = 3
	recordVersionV2 = 2
	recordVersionV1 = 1
)

// errCorruptValue is wrapped by every decoding error.
var errCorruptValue = errors.New("malformed value")

// appendRecord appends the encoding of r, without r.Path (the key), to b:
// the version byte, then the fields in order as varints, fixed bytes and
// length-prefixed strings.
func appendRecord(b []byte, r *Record) []byte {
	b = append(b, recordVersion)
	b = binary.AppendVarint(b, r.Stamp.Size)
	b = binary.AppendVarint(b, r.Stamp.ModTime)
	b = binary.AppendUvarint(b, r.Stamp.Inode)
	b = binary.AppendUvarint(b, r.Stamp.Device)
	b = binary.AppendVarint(b, r.Stamp.Ctime)
	b = append(b, r.Hash[:]...)
	b = appendString(b, r.Session)
	b = appendString(b, r.Resume)
	b = binary.AppendUvarint(b, uint64(r.Turns))
	b = appendString(b, r.LastRunID)
	b = append(b, byte(r.LastOutcome))
	var ns int64
	if !r.Processed.IsZero() {
		ns = r.Processed.UnixNano()
	}
	b = binary.AppendVarint(b, ns)
	if r.Totals == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = binary.AppendVarint(b, r.Totals.InputTokens)
		b = binary.AppendVarint(b, r.Totals.OutputTokens)
		b = binary.AppendVarint(b, r.Totals.CacheReadTokens)
		b = binary.AppendVarint(b, r.Totals.CacheWriteTokens)
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.Totals.CostUSD))
	}
	b = binary.AppendUvarint(b, uint64(len(r.Wrote)))
	for _, h := range r.Wrote {
		b = append(b, h[:]...)
	}
	b = appendString(b, r.Agent)
	b = binary.AppendVarint(b, r.ContextTokens)
	b = binary.AppendVarint(b, r.ContextWindow)
	return b
}

// decodeRecord decodes a value written by appendRecord; path becomes
// r.Path.
func decodeRecord(path string, b []byte) (Record, error) {
	d := decoder{b: b}
	v := d.byte()
	if d.err == nil && (v < recordVersionV1 || v > recordVersion) {
		return Record{}, fmt.Errorf("%w: record version %d (this knotd reads %d at most)", errCorruptValue, v, recordVersion)
	}
	r := Record{Path: path}
	r.Stamp.Size = d.varint()
	r.Stamp.ModTime = d.varint()
	r.Stamp.Inode = d.uvarint()
	r.Stamp.Device = d.uvarint()
	if v >= recordVersionV2 {
		r.Stamp.Ctime = d.varint()
	}
	copy(r.Hash[:], d.fixed(len(r.Hash)))
	r.Session = d.string()
	r.Resume = d.string()
	r.Turns = int(d.uvarint())
	r.LastRunID = d.string()
	r.LastOutcome = Outcome(d.byte())
	if ns := d.varint(); ns != 0 {
		r.Processed = time.Unix(0, ns).UTC()
	}
	if v >= recordVersionV3 {
		switch d.byte() {
		case 0:
		case 1:
			r.Totals = &Usage{InputTokens: d.varint(), OutputTokens: d.varint(), CacheReadTokens: d.varint(), CacheWriteTokens: d.varint()}
			if bits := d.fixed(8); bits != nil {
				r.Totals.CostUSD = math.Float64frombits(binary.LittleEndian.Uint64(bits))
			}
		default:
			d.err = fmt.Errorf("%w: record totals flag out of range", errCorruptValue)
		}
	}
	if v >= recordVersionV4 {
		n := d.uvarint()
		if n > MaxWrote {
			d.err = fmt.Errorf("%w: record holds %d written versions, more than %d", errCorruptValue, n, MaxWrote)
		}
		for range min(n, MaxWrote) {
			var h Hash
			copy(h[:], d.fixed(len(h)))
			r.Wrote = append(r.Wrote, h)
		}
	}
	if v >= recordVersion {
		r.Agent = d.string()
		r.ContextTokens = d.varint()
		r.ContextWindow = d.varint()
	}
	if err := d.finish(); err != nil {
		return Record{}, err
	}
	if r.LastOutcome >= outcomeEnd || r.Turns < 0 || r.ContextTokens < 0 || r.ContextWindow < 0 {
		return Record{}, fmt.Errorf("%w: record field out of range", errCorruptValue)
	}
	return r, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// decoder reads what the append functions wrote. The first error sticks;
// later reads return zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated", errCorruptValue)
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) fixed(n int) []byte {
	if len(d.b) < n {
		d.fail()
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// raw returns a length-prefixed byte string, aliasing the input.
func (d *decoder) raw() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// bytes returns a copy of a length-prefixed byte string.
func (d *decoder) bytes() []byte { return append([]byte(nil), d.raw()...) }

func (d *decoder) string() string { return string(d.raw()) }

// finish reports the first error, or trailing bytes.
func (d *decoder) finish() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes", errCorruptValue, len(d.b))
	}
	return d.err
}
