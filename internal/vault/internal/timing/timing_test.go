package timing

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestDues checks the watch loop's waits: a key waits for backoff of its
// tries in a row, is due once that pause is over (a key not waiting is
// due at once), comes out in the keys' order, and is forgotten with its
// tries.
func TestDues(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var d Dues[string]
	if !d.IsDue("a", t0) {
		t.Fatal("a key not waiting is not due")
	}
	if _, ok := d.Next(); ok {
		t.Fatal("no key waits, yet next says one is due")
	}
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if got := d.Retry("b", "B", t0, time.Second); got != want {
			t.Fatalf("retry %d: pause %v, want %v", i, got, want)
		}
	}
	d.Retry("a", "A", t0, time.Second)
	if next, ok := d.Next(); !ok || !next.Equal(t0.Add(time.Second)) {
		t.Fatalf("next = %v, %v; want %v", next, ok, t0.Add(time.Second))
	}
	for _, c := range []struct {
		at   time.Duration
		want []string
	}{
		{0, nil},
		{time.Second, []string{"A"}},
		{4*time.Second - 1, []string{"A"}},
		{4 * time.Second, []string{"A", "B"}},
	} {
		if got := d.DueBy(t0.Add(c.at)); !slices.Equal(got, c.want) {
			t.Errorf("dueBy(t0+%v) = %q, want %q", c.at, got, c.want)
		}
		if got, want := d.IsDue("b", t0.Add(c.at)), slices.Contains(c.want, "B"); got != want {
			t.Errorf("isDue(b, t0+%v) = %v, want %v", c.at, got, want)
		}
	}
	d.Keep(func(key string) bool { return key == "b" })
	if got := d.DueBy(t0.Add(time.Hour)); !slices.Equal(got, []string{"B"}) {
		t.Errorf("after keep(b): due %q, want [B]", got)
	}
	d.Forget("b")
	if got := d.Retry("b", "B", t0, time.Second); got != time.Second {
		t.Errorf("after forget, the first pause is %v, want 1s: the tries were kept", got)
	}
}

// TestDuesWait checks the waits for a fixed delay: a key waits from its
// first Wait (a second Wait keeps its value and time), is found by Get,
// All and Len, counts for Next and DueBy, and a Retry after it starts
// from the first pause.
func TestDuesWait(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var d Dues[string]
	if _, _, ok := d.Get("a"); ok || d.Len() != 0 {
		t.Fatal("an empty Dues has a key")
	}
	d.Wait("a", "A", t0.Add(time.Second))
	d.Wait("a", "A2", t0.Add(time.Hour)) // waits already: kept as it was
	d.Wait("b", "B", t0.Add(2*time.Second))
	if val, at, ok := d.Get("a"); !ok || val != "A" || !at.Equal(t0.Add(time.Second)) {
		t.Errorf("get(a) = %q, %v, %v; want A, t0+1s, true", val, at, ok)
	}
	if d.Len() != 2 {
		t.Errorf("len = %d, want 2", d.Len())
	}
	all := map[string]time.Time{}
	for key, at := range d.All() {
		all[key] = at
	}
	if len(all) != 2 || !all["a"].Equal(t0.Add(time.Second)) || !all["b"].Equal(t0.Add(2*time.Second)) {
		t.Errorf("all = %v", all)
	}
	if next, ok := d.Next(); !ok || !next.Equal(t0.Add(time.Second)) {
		t.Errorf("next = %v, %v; want t0+1s", next, ok)
	}
	if got := d.DueBy(t0.Add(time.Second)); !slices.Equal(got, []string{"A"}) {
		t.Errorf("dueBy(t0+1s) = %q, want [A]", got)
	}
	if got := d.Retry("a", "A", t0, time.Second); got != time.Second {
		t.Errorf("retry after a wait: pause %v, want 1s", got)
	}
	d.Forget("a")
	if _, _, ok := d.Get("a"); ok || d.Len() != 1 {
		t.Errorf("after forget(a): get ok %v, len %d; want false, 1", ok, d.Len())
	}
}

// TestEarliest checks that the earliest of some times leaves zero times
// out, and says when all are zero.
func TestEarliest(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		name string
		ts   []time.Time
		want time.Time
		ok   bool
	}{
		{"none", nil, time.Time{}, false},
		{"all zero", []time.Time{{}, {}}, time.Time{}, false},
		{"one", []time.Time{{}, t0}, t0, true},
		{"earliest first", []time.Time{t0, t0.Add(time.Second)}, t0, true},
		{"earliest last", []time.Time{t0.Add(time.Second), {}, t0}, t0, true},
	} {
		if got, ok := Earliest(c.ts...); ok != c.ok || !got.Equal(c.want) {
			t.Errorf("%s: earliest = %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// TestLater checks a scheduler's delayed submissions in fake time: a
// newer call replaces a strand's waiting one, calls come when due, a
// follow-up is superseded and a retry is not, work is held for a retry
// and released with it, and neither a canceled context's call nor any
// after Stop is made.
func TestLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l Later[string]
		start := time.Now()
		var mu sync.Mutex
		var got []string
		call := func(what string) func() {
			return func() {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, fmt.Sprintf("%s@%v", what, time.Since(start)))
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		canceled, cancelNow := context.WithCancel(context.Background())
		cancelNow()
		l.After(ctx, "a", 2*time.Second, call("a-first"))
		l.After(ctx, "b", time.Second, call("b"))
		l.After(ctx, "a", 3*time.Second, call("a")) // replaces a-first
		l.After(ctx, "c", time.Second, call("c"))
		l.Supersede("c") // a follow-up: it goes
		if pause := l.Failed("d"); pause != time.Second {
			t.Errorf("first failure: pause %v, want 1s", pause)
		}
		if l.Hold("d", "x", func(w, s string) string { return w + s }) {
			t.Error("work held for a retry that does not wait")
		}
		l.After(ctx, "d", 4*time.Second, call("d"))
		l.Supersede("d") // a retry: it stays
		merge := func(w, s string) string { return w + "+" + s }
		if !l.Hold("d", "x", merge) || !l.Hold("d", "y", merge) {
			t.Error("work not held for a waiting retry")
		}
		if got := l.Release("d", "z", merge); got != "z+x+y" {
			t.Errorf("released %q, want z+x+y", got)
		}
		l.After(canceled, "e", time.Second, call("e"))
		l.After(ctx, "f", 10*time.Second, call("f"))
		time.Sleep(5 * time.Second)
		synctest.Wait()
		l.Stop()
		l.After(ctx, "g", time.Second, call("g"))
		time.Sleep(time.Minute)
		synctest.Wait()
		cancel()
		mu.Lock()
		defer mu.Unlock()
		if want := []string{"b@1s", "a@3s", "d@4s"}; !slices.Equal(got, want) {
			t.Errorf("calls %q; want %q", got, want)
		}
	})
}
