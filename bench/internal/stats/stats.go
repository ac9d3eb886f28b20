// Package stats computes and prints the figures of the bench's table:
// medians and percentiles, milliseconds and MiB, numbers at a precision
// that suits their size.
package stats

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// Percentile returns the p-th percentile (0 < p <= 100) of xs by the
// nearest-rank method: the smallest sample that at least p percent of the
// samples do not exceed. It returns NaN for no samples.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	rank = min(max(rank, 1), len(s))
	return s[rank-1]
}

// Median returns the median of xs (the mean of the two middle samples for
// an even count), or NaN for no samples.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Ms converts a duration to milliseconds as a float.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// MiB converts bytes to MiB.
func MiB(b int64) float64 { return float64(b) / (1 << 20) }

// Format prints a figure with a precision that suits its size.
func Format(x float64) string {
	switch a := math.Abs(x); {
	case math.IsNaN(x):
		return "n/a"
	case a == 0:
		return "0"
	case a >= 1000:
		return fmt.Sprintf("%.0f", x)
	case a >= 100:
		return fmt.Sprintf("%.0f", x)
	case a >= 10:
		return fmt.Sprintf("%.1f", x)
	case a >= 1:
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.3f", x)
}

// Thousands formats n with thin separators: 100000 → 100,000.
func Thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
