package watcher

import (
	"cmp"
	"container/heap"
	"slices"
	"time"
)

// pending is the debounce bookkeeping: the hints seen but not yet settled,
// each with the time it was first and last seen. It is pure (time is a
// parameter) and owned by one goroutine.
//
// A hint is due when it has been quiet for the quiet period, or when the
// maximum wait has passed since it was first seen, whichever comes first,
// so a file written continuously still fires every maxWait.
//
// A pending full rescan absorbs every other hint (it covers them all), and
// more than max distinct hints collapse into a full rescan, so memory stays
// bounded during a storm (a git checkout, a sync of thousands of files).
//
// Deadlines only move later, so each hint has one entry in a min-heap whose
// key may be early; an early entry is pushed back with its current
// deadline when it reaches the top. add, due and next cost O(log n).
type pending struct {
	quiet, maxWait time.Duration
	max            int
	m              map[Hint]window
	q              deadlines
}

// window is when a pending hint was first and last seen.
type window struct {
	first, last time.Time
}

func newPending(quiet, maxWait time.Duration, max int) *pending {
	if maxWait < quiet {
		maxWait = quiet
	}
	return &pending{quiet: quiet, maxWait: maxWait, max: max, m: make(map[Hint]window)}
}

// add records that h was seen at now.
func (p *pending) add(h Hint, now time.Time) {
	if w, ok := p.m[fullRescan]; ok {
		w.last = later(w.last, now)
		p.m[fullRescan] = w
		return
	}
	w, ok := p.m[h]
	if ok {
		w.last = later(w.last, now)
		p.m[h] = w
		return
	}
	if h.Full() || len(p.m) >= p.max {
		p.collapse(now)
		return
	}
	w = window{first: now, last: now}
	p.m[h] = w
	heap.Push(&p.q, entry{h, p.deadline(w)})
}

// collapse replaces everything pending with one full rescan that keeps the
// earliest first-seen time, so the maximum wait still holds.
func (p *pending) collapse(now time.Time) {
	first := now
	for _, w := range p.m {
		if w.first.Before(first) {
			first = w.first
		}
	}
	clear(p.m)
	p.q = p.q[:0]
	w := window{first: first, last: now}
	p.m[fullRescan] = w
	heap.Push(&p.q, entry{fullRescan, p.deadline(w)})
}

func (p *pending) deadline(w window) time.Time {
	d := w.last.Add(p.quiet)
	if m := w.first.Add(p.maxWait); m.Before(d) {
		return m
	}
	return d
}

// due removes and returns the hints that are settled at now, earliest
// deadline first (ties by path, files before directories).
func (p *pending) due(now time.Time) []Hint {
	var out []entry
	for len(p.q) > 0 && !p.q[0].at.After(now) {
		e := heap.Pop(&p.q).(entry)
		d := p.deadline(p.m[e.h])
		if d.After(now) {
			heap.Push(&p.q, entry{e.h, d})
			continue
		}
		delete(p.m, e.h)
		out = append(out, entry{e.h, d})
	}
	slices.SortFunc(out, entry.compare)
	hs := make([]Hint, len(out))
	for i, e := range out {
		hs[i] = e.h
	}
	return hs
}

// next returns a time at or before the earliest deadline of a pending
// hint (call due then), and false if nothing is pending.
func (p *pending) next() (time.Time, bool) {
	if len(p.q) == 0 {
		return time.Time{}, false
	}
	return p.q[0].at, true
}

// len returns the number of pending hints.
func (p *pending) len() int { return len(p.m) }

// entry is a hint in the deadline heap.
type entry struct {
	h  Hint
	at time.Time
}

func (a entry) compare(b entry) int {
	if c := a.at.Compare(b.at); c != 0 {
		return c
	}
	if c := cmp.Compare(a.h.Path, b.h.Path); c != 0 {
		return c
	}
	return cmp.Compare(btoi(a.h.Dir), btoi(b.h.Dir))
}

// deadlines is a min-heap of entries (container/heap).
type deadlines []entry

func (q deadlines) Len() int           { return len(q) }
func (q deadlines) Less(i, j int) bool { return q[i].compare(q[j]) < 0 }
func (q deadlines) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *deadlines) Push(x any)        { *q = append(*q, x.(entry)) }
func (q *deadlines) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
