package agentrun

import (
	"errors"
	"strings"

	"github.com/knotd/knotd/transcript"
)

// geminiDriver runs Gemini CLI headless:
//
//	gemini --output-format json [--model M] --session-id <session>  (new)
//	gemini --output-format json [--model M] --resume <handle>       (resume)
//
// The prompt is read from standard input, which makes Gemini CLI run
// non-interactively; the working directory is the vault root (Gemini keeps
// sessions per project directory). The JSON output is one object
// (packages/core/src/output/json-formatter.ts): "response" is the reply,
// "session_id" the handle (printed by the versions that can resume by id),
// "stats.models.<name>.tokens" the usage and "error" a failure. Gemini CLI
// has no system-prompt flag (GEMINI_SYSTEM_MD replaces the whole system
// prompt from a file), so instructions go before the Event Context.
//
// What Gemini CLI 0.61.0 was seen to do (testdata/gemini-cli-0.61.0):
//   - a new session takes the strand's session id (--session-id); one
//     that exists already is refused with exit 42, "Error starting
//     session: Session ID … already exists";
//   - a session it does not have (its store was wiped, the vault moved, a
//     session whose only turn failed, another agent's handle) is refused
//     with exit 42, "Error resuming session: …";
//   - either refusal starts a fresh session, once (see sessionLost);
//   - a folder the user has not trusted is refused with exit 55: knotd
//     says what to do, and never trusts a folder for the user.
type geminiDriver struct{}

func (geminiDriver) delivery() PromptMode     { return PromptStdin }
func (geminiDriver) inlineInstructions() bool { return true }
func (geminiDriver) resumes() bool            { return true }
func (geminiDriver) defaultProgram() string   { return "gemini" }
func (geminiDriver) limits() Limits           { return Limits{} }
func (geminiDriver) parser() outputParser     { return geminiParser{} }

func (geminiDriver) argv(a *attempt) ([]string, error) {
	argv := append(append([]string(nil), a.program...), "--output-format", "json")
	if a.model != "" {
		argv = append(argv, "--model", a.model)
	}
	if a.resume != "" {
		argv = append(argv, "--resume", a.resume)
	} else if a.session != "" {
		argv = append(argv, "--session-id", a.session)
	}
	return argv, nil
}

// The standard-error texts of Gemini CLI 0.61.0's refusals.
const (
	geminiNoSession   = "Error resuming session:"
	geminiSessionUsed = "Error starting session: Session ID"
	geminiUntrusted   = "not running in a trusted directory"
)

func (geminiDriver) sessionLost(exitCode int, p parsed, stderr string) (string, bool) {
	if exitCode == 0 || p.reply != "" {
		return "", false
	}
	for _, refusal := range []string{geminiNoSession, geminiSessionUsed} {
		if i := strings.Index(stderr, refusal); i >= 0 {
			return firstLine(stderr[i:], 200), true
		}
	}
	return "", false
}

// geminiTrust is knotd's failure text for Gemini CLI's refusal of an
// untrusted folder.
const geminiTrust = "Gemini CLI does not trust the vault folder, so it refused to run. knotd does not trust folders for you: " +
	"trust it in Gemini CLI (run gemini in the vault once and choose to trust it, or add the vault's path with \"TRUST_FOLDER\" to ~/.gemini/trustedFolders.json), " +
	"or, to trust every folder this agent runs in, set GEMINI_CLI_TRUST_WORKSPACE: \"true\" in the agent's env in your config"

// geminiParser reads the JSON object of --output-format json with the
// transcript's decoder, from the whole output (the object is
// pretty-printed over many lines). Errors may be printed as the same kind
// of object on standard error; that is read when standard output has none.
type geminiParser struct{}

func (geminiParser) finish(stdout []byte, truncated bool, stderr string) (parsed, error) {
	if len(strings.TrimSpace(string(stdout))) == 0 && strings.Contains(stderr, geminiUntrusted) {
		return parsed{agentErr: geminiTrust}, nil
	}
	d := decodeGemini(stdout)
	d.Message.Truncated = truncated
	p := parsed{message: &d.Message}
	if !d.Ended {
		if e := decodeGemini([]byte(stderr)); e.Ended {
			d.Reply, d.Handle, d.Usage, d.Failure = e.Reply, e.Handle, e.Usage, e.Failure
		} else if len(strings.TrimSpace(string(stdout))) == 0 {
			return p, errNoOutput
		} else {
			return p, errors.New("no Gemini JSON object in the output")
		}
	}
	p.reply, p.handle, p.usage = d.Reply, d.Handle, d.Usage
	if d.Failure != "" {
		p.agentErr = firstLine(d.Failure, 300)
	}
	return p, nil
}

func decodeGemini(b []byte) transcript.Decoded {
	d, err := transcript.Decode(transcript.FormatGeminiJSON, b)
	if err != nil {
		panic("agentrun: " + err.Error()) // a format the decoder reads
	}
	return d
}
