package transcript

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLedgers(t *testing.T) {
	day := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	runs := []Summary{
		{Finished: true, Strand: "a.md", Agent: "claude", Time: day, Usage: &Usage{InputTokens: 10, OutputTokens: 2, CostUSD: 0.5}},
		{Finished: true, Strand: "notes/b.md", Agent: "claude", Time: day, Usage: &Usage{InputTokens: 5, CostUSD: 0.25}},
		{Finished: true, Strand: "notes/c.md", Agent: "gemini", Time: day.Add(24 * time.Hour), Usage: &Usage{InputTokens: 7, OutputTokens: 1}},
		{Finished: true, Strand: "notes/c.md", Agent: "digest", Time: day.Add(24 * time.Hour)},
		{Finished: false, Strand: "a.md", Agent: "claude", Time: day, Usage: &Usage{CostUSD: 9}}, // still running: not counted
	}
	tests := []struct {
		name string
		key  func(Summary) string
		want []LedgerRow
	}{
		{"by day", ByDay, []LedgerRow{
			{"2026-11-23", Ledger{Runs: 2, Priced: 2, Metered: 2, Usage: Usage{InputTokens: 15, OutputTokens: 2, CostUSD: 0.75}}},
			{"2026-11-24", Ledger{Runs: 2, Priced: 0, Metered: 1, Usage: Usage{InputTokens: 7, OutputTokens: 1}}},
		}},
		{"by agent", ByAgent, []LedgerRow{
			{"claude", Ledger{Runs: 2, Priced: 2, Metered: 2, Usage: Usage{InputTokens: 15, OutputTokens: 2, CostUSD: 0.75}}},
			{"digest", Ledger{Runs: 1}},
			{"gemini", Ledger{Runs: 1, Metered: 1, Usage: Usage{InputTokens: 7, OutputTokens: 1}}},
		}},
		{"by folder", ByFolder, []LedgerRow{
			{"(top level)", Ledger{Runs: 1, Priced: 1, Metered: 1, Usage: Usage{InputTokens: 10, OutputTokens: 2, CostUSD: 0.5}}},
			{"notes/", Ledger{Runs: 3, Priced: 1, Metered: 2, Usage: Usage{InputTokens: 12, OutputTokens: 1, CostUSD: 0.25}}},
		}},
		{"by note", ByNote, []LedgerRow{
			{"a.md", Ledger{Runs: 1, Priced: 1, Metered: 1, Usage: Usage{InputTokens: 10, OutputTokens: 2, CostUSD: 0.5}}},
			{"notes/b.md", Ledger{Runs: 1, Priced: 1, Metered: 1, Usage: Usage{InputTokens: 5, CostUSD: 0.25}}},
			{"notes/c.md", Ledger{Runs: 2, Metered: 1, Usage: Usage{InputTokens: 7, OutputTokens: 1}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Ledgers(runs, tt.key))
		})
	}
}
