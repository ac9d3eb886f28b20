package stats

import (
	"math"
	"testing"
)

func TestPercentile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(100 - i) // 100 … 1, unsorted on purpose
	}
	tests := []struct {
		name string
		xs   []float64
		p    float64
		want float64
	}{
		{"one sample", []float64{7}, 99, 7},
		{"p50 of 1..100", hundred, 50, 50},
		{"p99 of 1..100", hundred, 99, 99},
		{"p100 is the max", hundred, 100, 100},
		{"tiny p is the min", hundred, 0.001, 1},
		{"p99 of three is the max", []float64{3, 1, 2}, 99, 3},
		{"p50 of four", []float64{4, 1, 3, 2}, 50, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.xs, tt.p); got != tt.want {
				t.Errorf("percentile(%v, %v) = %v; want %v", tt.xs, tt.p, got, tt.want)
			}
		})
	}
	if got := Percentile(nil, 50); !math.IsNaN(got) {
		t.Errorf("percentile(nil, 50) = %v; want NaN", got)
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		xs   []float64
		want float64
	}{
		{[]float64{5}, 5},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		if got := Median(tt.xs); got != tt.want {
			t.Errorf("median(%v) = %v; want %v", tt.xs, got, tt.want)
		}
	}
	if got := Median(nil); !math.IsNaN(got) {
		t.Errorf("median(nil) = %v; want NaN", got)
	}
}

func TestFormatNum(t *testing.T) {
	tests := []struct {
		x    float64
		want string
	}{
		{0, "0"},
		{0.01234, "0.012"},
		{1.234, "1.23"},
		{12.34, "12.3"},
		{123.4, "123"},
		{12345.6, "12346"},
		{math.NaN(), "n/a"},
	}
	for _, tt := range tests {
		if got := Format(tt.x); got != tt.want {
			t.Errorf("formatNum(%v) = %q; want %q", tt.x, got, tt.want)
		}
	}
}
