package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/knotd/knotd/internal/transcript"
)

// costReport is what knotd runs --cost --json prints.
type costReport struct {
	ByDay    []transcript.LedgerRow `json:"by_day"`
	ByAgent  []transcript.LedgerRow `json:"by_agent"`
	ByFolder []transcript.LedgerRow `json:"by_folder"`
	ByNote   []transcript.LedgerRow `json:"by_note"`
	Total    transcript.Ledger      `json:"total"`
}

// costOfRuns prints the ledger of the runs knotd runs would list.
func costOfRuns(root, dir string, o runsOptions, w io.Writer) error {
	runs, err := listedRuns(root, dir, o)
	if err != nil {
		return err
	}
	r := costReport{
		ByDay:    transcript.Ledgers(runs, transcript.ByDay),
		ByAgent:  transcript.Ledgers(runs, transcript.ByAgent),
		ByFolder: transcript.Ledgers(runs, transcript.ByFolder),
		ByNote:   transcript.Ledgers(runs, transcript.ByNote),
	}
	for _, s := range runs {
		r.Total.Add(s)
	}
	if o.jsonOut {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	if r.Total.Runs == 0 {
		_, err := fmt.Fprintln(w, "no finished runs")
		return err
	}
	// One table, so that the columns line up across the groups; a blank
	// row between them.
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, g := range []struct {
		title string
		rows  []transcript.LedgerRow
	}{{"DAY (UTC)", r.ByDay}, {"AGENT", r.ByAgent}, {"FOLDER", r.ByFolder}, {"NOTE", r.ByNote}} {
		fmt.Fprintf(tw, "%s\tRUNS\tINPUT\tOUTPUT\tCACHE READ\tCACHE WRITE\tCOST\n", g.title)
		for _, row := range g.rows {
			fmt.Fprintf(tw, "%s\t%s\n", orDash(row.Key), ledgerColumns(row.Ledger))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "TOTAL\t%s\n", ledgerColumns(r.Total))
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, "\nTokens and cost as the agents' CLIs reported them; a CLI that reports no cost shows its tokens only.")
	return err
}

// ledgerColumns are a ledger's columns after its key: runs, tokens, and
// the cost the CLIs reported ("-" when none did; "+ N runs unpriced" when
// only some did).
func ledgerColumns(l transcript.Ledger) string {
	cost := "-"
	if l.Priced > 0 {
		cost = fmt.Sprintf("$%.4f", l.Usage.CostUSD)
		if l.Priced < l.Runs {
			cost += fmt.Sprintf(" (+%d unpriced)", l.Runs-l.Priced)
		}
	}
	tokens := func(n int64) string {
		if l.Metered == 0 {
			return "-" // no CLI reported tokens: not known, not 0
		}
		return fmt.Sprint(n)
	}
	cols := []string{fmt.Sprint(l.Runs), tokens(l.Usage.InputTokens), tokens(l.Usage.OutputTokens),
		tokens(l.Usage.CacheReadTokens), tokens(l.Usage.CacheWriteTokens), cost}
	return strings.Join(cols, "\t")
}
