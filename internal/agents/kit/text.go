package kit

import (
	"fmt"
	"strings"

	"github.com/knotd/knotd/internal/transcript"
)

// TextParser takes all of standard output as the reply: the parser of an
// agent that prints its reply as plain text. A reply cut at the standard
// output limit ends with a line that says so, so that the tie-off shows it.
// The runner hands a TextParser's output to the transcript as it comes.
type TextParser struct{}

// Finish reads the whole output.
func (TextParser) Finish(stdout []byte, truncated bool, _ string) (Parsed, error) {
	if len(strings.TrimSpace(string(stdout))) == 0 {
		return Parsed{}, ErrNoOutput
	}
	p := Parsed{Reply: string(stdout), Message: TextMessage(string(stdout), truncated)}
	if truncated {
		p.Notes = append(p.Notes, "the reply was cut at the standard output limit")
		p.Reply = CleanReply(p.Reply) + "\n\n" + fmt.Sprintf(cutMark, len(stdout))
	}
	return p, nil
}

// cutMark ends a reply cut at the standard output limit (its size in
// bytes).
const cutMark = "[knotd: the reply was cut here, at the %d-byte standard output limit]"

// TextMessage is text as a transcript message of one text-only block.
func TextMessage(text string, truncated bool) *transcript.AssistantMessage {
	d := Decode(FormatText, nil, []byte(text))
	d.Message.Truncated = truncated
	return &d.Message
}

// CleanReply makes a reply fit for a tie-off: valid UTF-8, no leading blank
// lines, no trailing white space. The text is otherwise unchanged.
func CleanReply(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.TrimRight(s, " \t\r\n")
	for {
		nl := strings.IndexByte(s, '\n')
		if nl < 0 || strings.TrimSpace(s[:nl]) != "" {
			return s
		}
		s = s[nl+1:]
	}
}
