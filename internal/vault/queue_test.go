package vault

import (
	"testing"
	"time"

	"github.com/knotd/knotd/internal/vault/internal/timing"
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
		if got := timing.Backoff(c.first, c.tries); got != c.want {
			t.Errorf("Backoff(%v, %d) = %v, want %v", c.first, c.tries, got, c.want)
		}
	}
	// The journal's loop doubled its pause itself: the formula gives the
	// same sequence.
	pause := time.Second
	for tries := range 40 {
		if got := timing.Backoff(time.Second, tries); got != pause {
			t.Fatalf("try %d: backoff = %v, the doubling loop gave %v", tries, got, pause)
		}
		pause = min(2*pause, maxRetryPause)
	}
}
