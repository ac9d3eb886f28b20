package transcript

// A run id is a UUID v7: its first digits are the time it was made, which
// the runs of the same minutes share, so a prefix of a few digits names no
// run. Its last digits are random: people name a run by them.

// ShortLen is the length of a run's short id: the last ShortLen hex digits
// of its run id (from the UUID's random part, with no dash in them).
const ShortLen = 8

// ShortID returns runID's short id: its last ShortLen characters.
func ShortID(runID string) string {
	if len(runID) <= ShortLen {
		return runID
	}
	return runID[len(runID)-ShortLen:]
}

// ShortIDs returns, for each run id of ids, the shortest end of it, at
// least ShortLen characters long, that no other id of ids ends with: a
// short id that names that run only among them (the whole id when another
// one is the same).
func ShortIDs(ids []string) map[string]string {
	groups := map[string][]string{}
	for _, id := range ids {
		s := ShortID(id)
		groups[s] = append(groups[s], id)
	}
	out := make(map[string]string, len(ids))
	for s, g := range groups {
		if len(g) == 1 {
			out[g[0]] = s
			continue
		}
		// Rare (two runs sharing 32 random bits): make each long enough
		// to tell it from every other of its group.
		for _, id := range g {
			n := ShortLen
			for _, other := range g {
				if other != id {
					n = max(n, commonSuffix(id, other)+1)
				}
			}
			out[id] = id[max(0, len(id)-n):]
		}
	}
	return out
}

// commonSuffix is the length of the longest end a and b share.
func commonSuffix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[len(a)-1-n] == b[len(b)-1-n] {
		n++
	}
	return n
}
