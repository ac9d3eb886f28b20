package watcher

import (
	"cmp"
	"container/heap"
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
// Each pending hint is one item, found by its hint in a map and kept in
// a min-heap by its deadline, which add moves (heap.Fix) as the hint is
// seen again. add, due and next cost O(log n).
type pending struct {
	quiet, maxWait time.Duration
	max            int
	m              map[Hint]*item
	q              queue
}

// item is one pending hint: when it was first and last seen, its deadline
// and its place in the heap.
type item struct {
	h           Hint
	first, last time.Time
	at          time.Time // deadline(first, last)
	i           int
}

func newPending(quiet, maxWait time.Duration, max int) *pending {
	if maxWait < quiet {
		maxWait = quiet
	}
	return &pending{quiet: quiet, maxWait: maxWait, max: max, m: make(map[Hint]*item)}
}

// add records that h was seen at now.
func (p *pending) add(h Hint, now time.Time) {
	if it, ok := p.m[fullRescan]; ok {
		p.seen(it, now)
		return
	}
	if it, ok := p.m[h]; ok {
		p.seen(it, now)
		return
	}
	if h.Full() || len(p.m) >= p.max {
		p.collapse(now)
		return
	}
	p.push(h, now, now)
}

// seen moves a pending item's last sighting, and so its deadline, to now
// (never earlier).
func (p *pending) seen(it *item, now time.Time) {
	it.last = later(it.last, now)
	it.at = p.deadline(it.first, it.last)
	heap.Fix(&p.q, it.i)
}

func (p *pending) push(h Hint, first, last time.Time) {
	it := &item{h: h, first: first, last: last, at: p.deadline(first, last)}
	p.m[h] = it
	heap.Push(&p.q, it)
}

// collapse replaces everything pending with one full rescan that keeps the
// earliest first-seen time, so the maximum wait still holds.
func (p *pending) collapse(now time.Time) {
	first := now
	for _, it := range p.m {
		if it.first.Before(first) {
			first = it.first
		}
	}
	clear(p.m)
	clear(p.q)
	p.q = p.q[:0]
	p.push(fullRescan, first, now)
}

func (p *pending) deadline(first, last time.Time) time.Time {
	d := last.Add(p.quiet)
	if m := first.Add(p.maxWait); m.Before(d) {
		return m
	}
	return d
}

// due removes and returns the hints that are settled at now, earliest
// deadline first (ties by path, files before directories).
func (p *pending) due(now time.Time) []Hint {
	var hs []Hint
	for len(p.q) > 0 && !p.q[0].at.After(now) {
		it := heap.Pop(&p.q).(*item)
		delete(p.m, it.h)
		hs = append(hs, it.h)
	}
	return hs
}

// next returns the earliest deadline of a pending hint (call due then),
// and false if nothing is pending.
func (p *pending) next() (time.Time, bool) {
	if len(p.q) == 0 {
		return time.Time{}, false
	}
	return p.q[0].at, true
}

// len returns the number of pending hints.
func (p *pending) len() int { return len(p.m) }

func (a *item) compare(b *item) int {
	if c := a.at.Compare(b.at); c != 0 {
		return c
	}
	if c := cmp.Compare(a.h.Path, b.h.Path); c != 0 {
		return c
	}
	return cmp.Compare(btoi(a.h.Dir), btoi(b.h.Dir))
}

// queue is a min-heap of items by deadline (container/heap).
type queue []*item

func (q queue) Len() int           { return len(q) }
func (q queue) Less(i, j int) bool { return q[i].compare(q[j]) < 0 }
func (q queue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].i, q[j].i = i, j
}
func (q *queue) Push(x any) {
	it := x.(*item)
	it.i = len(*q)
	*q = append(*q, it)
}
func (q *queue) Pop() any {
	old := *q
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return it
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
