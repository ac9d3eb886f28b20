package vault

import (
	"slices"
	"testing"
	"time"
)

// TestBackoff checks the one retry formula against the pauses its four
// copies gave: a first pause doubling with each failure, up to
// maxRetryPause, and no overflow however long a failure lasts.
func TestBackoff(t *testing.T) {
	for _, c := range []struct {
		first time.Duration
		tries int
		want  time.Duration
	}{
		{time.Second, 0, time.Second},
		{time.Second, 1, 2 * time.Second},
		{time.Second, 8, 256 * time.Second},
		{time.Second, 9, maxRetryPause},
		{time.Second, 1000, maxRetryPause},
		{rootCheck, 0, rootCheck},
		{rootCheck, 1, 2 * rootCheck},
		{rootCheck, 5, maxRetryPause},
		{rootCheck, 63, maxRetryPause},
	} {
		if got := backoff(c.first, c.tries); got != c.want {
			t.Errorf("backoff(%v, %d) = %v, want %v", c.first, c.tries, got, c.want)
		}
	}
	// The journal's loop doubled its pause itself: the formula gives the
	// same sequence.
	pause := time.Second
	for tries := range 40 {
		if got := backoff(time.Second, tries); got != pause {
			t.Fatalf("try %d: backoff = %v, the doubling loop gave %v", tries, got, pause)
		}
		pause = min(2*pause, maxRetryPause)
	}
}

// TestDues checks the watch loop's waits: a key waits for backoff of its
// tries in a row, is due once that pause is over (a key not waiting is
// due at once), comes out in the keys' order, and is forgotten with its
// tries.
func TestDues(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var d dues[string]
	if !d.isDue("a", t0) {
		t.Fatal("a key not waiting is not due")
	}
	if _, ok := d.next(); ok {
		t.Fatal("no key waits, yet next says one is due")
	}
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		if got := d.retry("b", "B", t0, time.Second); got != want {
			t.Fatalf("retry %d: pause %v, want %v", i, got, want)
		}
	}
	d.retry("a", "A", t0, time.Second)
	if next, ok := d.next(); !ok || !next.Equal(t0.Add(time.Second)) {
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
		if got := d.dueBy(t0.Add(c.at)); !slices.Equal(got, c.want) {
			t.Errorf("dueBy(t0+%v) = %q, want %q", c.at, got, c.want)
		}
		if got, want := d.isDue("b", t0.Add(c.at)), slices.Contains(c.want, "B"); got != want {
			t.Errorf("isDue(b, t0+%v) = %v, want %v", c.at, got, want)
		}
	}
	d.keep(func(key string) bool { return key == "b" })
	if got := d.dueBy(t0.Add(time.Hour)); !slices.Equal(got, []string{"B"}) {
		t.Errorf("after keep(b): due %q, want [B]", got)
	}
	d.forget("b")
	if got := d.retry("b", "B", t0, time.Second); got != time.Second {
		t.Errorf("after forget, the first pause is %v, want 1s: the tries were kept", got)
	}
}
