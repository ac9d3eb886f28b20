package watcher

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestPending(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 19, 30, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	a, b, c := Hint{Path: "a.md"}, Hint{Path: "b.md"}, Hint{Path: "c.md"}
	d := Hint{Path: "notes", Dir: true}

	// step is one call: add(h, at(ms)) when h is set, else due(at(ms))
	// expecting want, then next() expecting next (-1: nothing pending, -2: not checked).
	type step struct {
		ms   int
		h    *Hint
		want []Hint
		next int
	}
	add := func(ms int, h Hint, next int) step { return step{ms: ms, h: &h, next: next} }
	due := func(ms int, next int, want ...Hint) step { return step{ms: ms, want: want, next: next} }

	tests := []struct {
		name           string
		quiet, maxWait int // ms
		max            int
		steps          []step
	}{
		{"quiet period exact", 2000, 15000, 100, []step{
			add(0, a, 2000),
			due(1999, 2000),
			due(2000, -1, a),
			due(5000, -1),
		}},
		{"each event restarts the quiet period", 2000, 15000, 100, []step{
			add(0, a, 2000),
			add(1500, a, 3500), // the deadline moves with the event
			due(2000, 3500),
			due(3499, 3500),
			due(3500, -1, a),
		}},
		{"max wait bounds a continuous writer", 2000, 15000, 100, func() []step {
			var s []step
			for ms := 0; ms < 15000; ms += 500 {
				s = append(s, add(ms, a, -2), due(ms, -2))
			}
			return append(s, due(15000, -1, a), add(15500, a, 17500), due(17500, -1, a))
		}()},
		{"paths settle independently, earliest first", 2000, 15000, 100, []step{
			add(0, b, 2000),
			add(100, a, 2000),
			add(900, c, 2000),
			due(2100, 2900, b, a),
			due(2900, -1, c),
		}},
		{"equal deadlines come out by path, files before directories", 2000, 15000, 100, []step{
			add(0, b, 2000),
			add(0, Hint{Path: "b.md", Dir: true}, 2000),
			add(0, a, 2000),
			due(2000, -1, a, b, Hint{Path: "b.md", Dir: true}),
		}},
		{"a full rescan absorbs other hints and extends", 2000, 15000, 100, []step{
			add(0, a, 2000),
			add(500, fullRescan, 2500),
			add(1000, b, 3000),
			add(1500, d, 3500),
			due(2000, 3500),
			due(3500, -1, fullRescan),
			add(4000, a, 6000),
			due(6000, -1, a),
		}},
		{"too many paths collapse into a full rescan keeping the first time", 2000, 5000, 3, []step{
			add(0, a, 2000),
			add(1000, b, 2000),
			add(1000, c, 2000),
			add(1500, d, 3500), // fourth distinct hint
			add(3000, a, 5000),
			due(4999, 5000),
			due(5000, -1, fullRescan), // max wait from a's first event
		}},
		{"max wait below quiet means quiet", 2000, 1000, 100, []step{
			add(0, a, 2000),
			due(1000, 2000),
			due(2000, -1, a),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPending(time.Duration(tt.quiet)*time.Millisecond, time.Duration(tt.maxWait)*time.Millisecond, tt.max)
			for i, s := range tt.steps {
				op := fmt.Sprintf("step %d: due(+%dms)", i, s.ms)
				if s.h != nil {
					op = fmt.Sprintf("step %d: add(%v, +%dms)", i, *s.h, s.ms)
					p.add(*s.h, at(s.ms))
				} else if got := p.due(at(s.ms)); !slices.Equal(got, s.want) {
					t.Fatalf("%s = %v; want %v", op, got, s.want)
				}
				if s.next == -2 {
					continue
				}
				next, ok := p.next()
				switch {
				case s.next == -1 && ok:
					t.Fatalf("%s: next() = +%v; want nothing pending (%d pending)", op, next.Sub(t0), p.len())
				case s.next >= 0 && (!ok || !next.Equal(at(s.next))):
					t.Fatalf("%s: next() = +%v, %v; want +%dms, the earliest deadline", op, next.Sub(t0), ok, s.next)
				}
			}
		})
	}
}
