package question

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseNoteAnswers(t *testing.T) {
	long := strings.Repeat("x", MaxWhy)
	many := make([]any, MaxAnswers+5)
	for i := range many {
		many[i] = fmt.Sprintf("approve %08x", i)
	}
	tests := []struct {
		name string
		v    any
		want string   // the answers, "verdict id why" joined by " | "
		errs []string // a piece of each error, in order
	}{
		{name: "absent", v: nil},
		{name: "empty text", v: ""},
		{name: "blank text", v: "  \n "},
		{name: "approve", v: "approve 3f9a2c1b", want: "approve 3f9a2c1b"},
		{name: "deny with a reason", v: "deny 3f9a2c1b too risky, do it by hand", want: "deny 3f9a2c1b too risky, do it by hand"},
		{name: "withdraw", v: "withdraw 3f9a2c1b", want: "withdraw 3f9a2c1b"},
		{name: "verb in any case", v: "Approve 3f9a2c1b", want: "approve 3f9a2c1b"},
		{name: "verb in capitals", v: "DENY 3f9a2c1b", want: "deny 3f9a2c1b"},
		{name: "id in capitals", v: "approve 3F9A2C1B", want: "approve 3f9a2c1b"},
		{name: "comma after the id", v: "deny 3f9a2c1b, not now", want: "deny 3f9a2c1b not now"},
		{name: "colon after the id", v: "deny 3f9a2c1b: not now", want: "deny 3f9a2c1b not now"},
		{name: "extra spaces", v: "  deny \t 3f9a2c1b   too    risky  ", want: "deny 3f9a2c1b too risky"},
		{name: "a reason of the longest", v: "deny 3f9a2c1b " + long, want: "deny 3f9a2c1b " + long},
		{name: "list", v: []any{"approve 3f9a2c1b", "deny 0badf00d no"}, want: "approve 3f9a2c1b | deny 0badf00d no"},
		{name: "list of strings", v: []string{"approve 3f9a2c1b", "withdraw 0badf00d"}, want: "approve 3f9a2c1b | withdraw 0badf00d"},
		{name: "lines of a block", v: "approve 3f9a2c1b\ndeny 0badf00d no\n", want: "approve 3f9a2c1b | deny 0badf00d no"},
		{name: "empty list items", v: []any{nil, "approve 3f9a2c1b", ""}, want: "approve 3f9a2c1b"},
		{name: "the same answer twice", v: []any{"approve 3f9a2c1b", "Approve 3F9A2C1B again"}, want: "approve 3f9a2c1b"},

		{name: "two ways", v: []any{"approve 3f9a2c1b", "deny 0badf00d", "deny 3f9a2c1b"}, want: "deny 0badf00d",
			errs: []string{"knot_answer, item 3: question 3f9a2c1b is answered both approve and deny; neither is applied"}},
		{name: "two ways, then again", v: []any{"approve 3f9a2c1b", "deny 3f9a2c1b", "approve 3f9a2c1b"},
			errs: []string{"answered both approve and deny"}},
		{name: "unknown verb", v: "approved 3f9a2c1b", errs: []string{`knot_answer: "approved 3f9a2c1b": "approved" is not approve, deny or withdraw; write one of "approve 3f9a2c1b"`}},
		{name: "yes", v: "yes", errs: []string{`"yes" is not approve, deny or withdraw`}},
		{name: "no id", v: "approve", errs: []string{`knot_answer: "approve": no question id after approve`}},
		{name: "short id", v: "approve 3f9a", errs: []string{`"3f9a" is not a question id (8 hex digits, such as 3f9a2c1b); copy it from the question in the tie-off`}},
		{name: "id not hex", v: "deny 3f9a2c1x", errs: []string{`"3f9a2c1x" is not a question id`}},
		{name: "reason too long", v: "deny 3f9a2c1b " + long + "y", errs: []string{fmt.Sprintf("the reason is %d bytes; at most %d are allowed: shorten it", MaxWhy+1, MaxWhy)}},
		{name: "a number", v: 12345678, errs: []string{"knot_answer: the value is the number 12345678 (put it in quotes if you mean text), not an answer"}},
		{name: "a boolean", v: true, errs: []string{"the value is the boolean true"}},
		{name: "a mapping", v: map[string]any{"approve": "3f9a2c1b"}, errs: []string{"the value is a mapping (key: value)"}},
		{name: "a number in a list", v: []any{"approve 3f9a2c1b", 7}, want: "approve 3f9a2c1b", errs: []string{"knot_answer, item 2: the number 7"}},
		{name: "a nested list", v: []any{[]any{"approve 3f9a2c1b"}}, errs: []string{"knot_answer: a nested list is not an answer"}},
		{name: "good and bad", v: []any{"approve 3f9a2c1b", "aprove 0badf00d"}, want: "approve 3f9a2c1b", errs: []string{`knot_answer, item 2: "aprove 0badf00d": "aprove" is not approve`}},
		{name: "too many", v: many, want: strings.TrimSuffix(strings.Repeat("x | ", MaxAnswers), " | "), errs: []string{"more than 50 answers; the rest are not read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := ParseNoteAnswers(tt.v)
			var parts []string
			for _, a := range got {
				p := string(a.Verdict) + " " + a.ID
				if a.Why != "" {
					p += " " + a.Why
				}
				parts = append(parts, p)
			}
			g := strings.Join(parts, " | ")
			if tt.name == "too many" {
				if len(got) != MaxAnswers || got[MaxAnswers-1].ID != fmt.Sprintf("%08x", MaxAnswers-1) {
					t.Errorf("ParseNoteAnswers(%d answers) = %d answers", len(many), len(got))
				}
			} else if g != tt.want {
				t.Errorf("ParseNoteAnswers(%#v) = %q; want %q", tt.v, g, tt.want)
			}
			if len(errs) != len(tt.errs) {
				t.Fatalf("ParseNoteAnswers(%#v) errors %v; want %d", tt.v, errs, len(tt.errs))
			}
			for i, e := range errs {
				if !strings.Contains(e.Error(), tt.errs[i]) {
					t.Errorf("error %d = %q; want it to contain %q", i, e, tt.errs[i])
				}
			}
		})
	}
}

// FuzzParseNoteAnswers: any text, alone or in a list, gives valid answers
// within the bounds and never panics.
func FuzzParseNoteAnswers(f *testing.F) {
	f.Add("approve 3f9a2c1b", "deny 0badf00d too risky")
	f.Add("Withdraw 3F9A2C1B:", "approve 3f9a2c1b")
	f.Add("deny 3f9a2c1b "+strings.Repeat("é", 300), "\n\napprove\n")
	f.Add("approve 3f9a2c1b\ndeny 3f9a2c1b", "")
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, v := range []any{a, []any{a, b}, []any{a, nil, 3, b}} {
			got, errs := ParseNoteAnswers(v)
			if len(got) > MaxAnswers || len(errs) > MaxAnswers+1 {
				t.Fatalf("%d answers, %d errors", len(got), len(errs))
			}
			seen := map[string]bool{}
			for _, x := range got {
				if !ValidID(x.ID) || verdictWord(x.Verdict) == "" || len(x.Why) > MaxWhy || seen[x.ID] {
					t.Fatalf("ParseNoteAnswers(%q) gave %+v", v, x)
				}
				seen[x.ID] = true
			}
			for _, e := range errs {
				if !strings.HasPrefix(e.Error(), "knot_answer") {
					t.Fatalf("error %q does not name the key", e)
				}
			}
		}
	})
}
