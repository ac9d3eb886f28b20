package timing

import (
	"slices"
	"testing"
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
