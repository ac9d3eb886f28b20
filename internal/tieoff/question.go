package tieoff

// OpenQuestions returns the question sections of secs (a tie-off's
// sections, oldest first, as Parse returns them) that wait for an answer:
// those with no later answer section of the same id. A question asked
// again under the same id (the same call, asked by the same run) is
// returned once, its newest section. The result is in the order of secs.
// A question whose marker did not record its id (see Parse's problems)
// waits for nothing. So the tie-off alone tells which questions wait; and
// since an answer always comes after its question, the newest sections
// alone (a Tail window) tell it exactly for the questions among them.
func OpenQuestions(secs []Section) []Section {
	open := make(map[string]int) // id -> index in secs of its newest question
	for i, s := range secs {
		switch {
		case s.Question == "":
		case s.Asked && s.Call != "":
			open[s.Question] = i
		case s.Verdict != "":
			delete(open, s.Question)
		}
	}
	var out []Section
	for i, s := range secs {
		if j, ok := open[s.Question]; ok && j == i {
			out = append(out, s)
		}
	}
	return out
}
