package conflict

import (
	"testing"

	"github.com/knotd/knotd/internal/state"
)

// TestJudgeNoteCopy: a note's conflict copy goes when it is exactly one of
// knotd's own writes of the note, or holds nothing the note lacks
// (knotd's keys aside); any other copy stays for the user.
func TestJudgeNoteCopy(t *testing.T) {
	const session = "---\nknot_session: 0b6c8f3e-4a4e-4f53-9d55-5a7e0c1d2e3f\n---\n"
	knotds := session + "# N\n\nI think th\n" // knotd's write: what the user had typed, and the key
	wrote := []state.Hash{state.HashOf([]byte("an older write")), state.HashOf([]byte(knotds))}
	for _, tc := range []struct {
		name, note, copy string
		wrote            []state.Hash
		want             int
	}{
		{"knotd's write, the user went on typing on the other device",
			"# N\n\nI think that knotd is done\n\nmore\n", knotds, wrote, OwnWrite},
		{"knotd's write, a newer save deleted a line of it",
			"# N\n", knotds, wrote, OwnWrite},
		{"the same bytes, but knotd does not know it wrote them",
			"# N\n\nI think that knotd is done\n", knotds, nil, NoFold},
		{"knotd's write with a line added on the other device",
			"# N\n\nI think that knotd is done\n", knotds + "added there\n", wrote, NoFold},
		{"every line of the copy is in the note, which has more",
			"# N\n\nI think th\n\nmore\n", knotds, nil, Removed},
		{"the same, knotd's keys aside",
			session + "# N\n\nI think th\n", "# N\n\nI think th\n", nil, Removed},
		{"another session in the copy, knotd's keys aside",
			session + "# N\n", "---\nknot_session: new\n---\n# N\n", nil, Removed},
		{"line endings aside",
			"# N\n\nI think th\n", "# N\r\n\r\nI think th", nil, Removed},
		{"an empty copy", "# N\n", "", nil, Removed},
		{"a line the note lacks (deleted on the note's device)",
			"# N\n\nkept\n", "# N\n\nkept\n\ndeleted here, kept there\n", nil, NoFold},
		{"a line twice in the copy, once in the note",
			"# N\n\n- milk\n", "# N\n\n- milk\n- milk\n", nil, NoFold},
		{"lines in another order",
			"# N\n\nfirst\n\nsecond\n", "# N\n\nsecond\n\nfirst\n", nil, NoFold},
		{"a frontmatter key of the user's the note lacks",
			session + "# N\n", "---\ntags: [idea]\n---\n# N\n", nil, NoFold},
		{"the user's frontmatter key in both",
			"---\ntags: [idea]\n---\n# N\n\nmore\n", "---\ntags: [idea]\nknot_session: new\n---\n# N\n", nil, Removed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Judge([]byte(tc.note), []byte(tc.copy), tc.wrote); got != tc.want {
				t.Errorf("conflict.Judge = %d; want %d", got, tc.want)
			}
		})
	}
}
