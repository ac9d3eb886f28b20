// Package agentrun turns one settled event on one strand into an agent run:
// it builds the prompt (the Event Context block of docs/formats.md#event-context followed by the
// strand's content), runs the configured agent CLI as a subprocess, and
// returns a structured Result.
//
// # Agents
//
// An Agent (see config.go) is one of:
//
//   - the built-in digest agent (the default when nothing is configured),
//     which runs in-process (package digest) and needs no network;
//   - a preset for a known CLI (docs/agents.md lists them), each
//     with its own new-session and resume command line, prompt delivery,
//     reply and resume-handle parsing and error classification. Each agent
//     has its home under agents/ (package agents lists them, one line
//     each): its output decoder, and its driver (a kit.Driver, which
//     kitdriver.go runs), or for an agent speaking ACP (claude-acp,
//     codex-acp, gemini, opencode) its preset (a kit.ACPPreset, which the
//     one ACP driver, acp.go, runs);
//   - a generic command: an argv template with the prompt on stdin, as one
//     argument or in a file, and text or JSON output (RFC 6901 JSON pointers
//     name the reply and the resume handle).
//
// # The prompt
//
// Every prompt starts with the Event Context block specified in
// docs/formats.md#event-context (internal/prompt builds it). Fences are made of
// more backticks than the longest run of backticks in what they enclose;
// each part is bounded (see Limits) with a visible marker of what was left
// out, and the whole prompt has a hard cap (ErrPromptTooLarge).
//
// # Running
//
// Commands are argv, never a shell. Template values such as {model} or
// {prompt_file} are substituted inside single argv elements, and a value may
// never turn an element into a flag (see internal/argtemplate). The prompt goes on
// standard input by default; otherwise standard input is /dev/null. A
// command with protocol: acp, and the presets on it (gemini among them),
// instead hold a conversation with the agent on its standard input and
// output (ACP, see converse.go), through knotd's ACP client on the
// acp-go-sdk (acp.go): the prompt is one message of it, standard input is
// closed once the reply is in, and session/cancel is sent before a
// timed-out or stopped agent is signalled. The
// working directory is the vault root. The environment is knotd's own plus
// KNOT_VAULT, KNOT_STRAND, KNOT_EVENT, KNOT_SESSION and KNOT_RUN_ID, with the
// agent's configured additions and removals.
//
// Each run has a wall-clock timeout (DefaultTimeout unless configured). On
// Unix the agent runs in its own process group: on timeout or cancellation
// the whole group gets SIGTERM, then SIGKILL after Runner.Grace, and the group
// is killed when the run ends so no descendant that stayed in the group
// outlives it (one that leaves it with setsid is beyond reach without
// cgroups). exec.Cmd.WaitDelay
// makes sure a descendant that keeps the output pipes open cannot block the
// run. On Linux the agent also gets SIGKILL if knotd dies, and with
// Runner.Groups set each agent's group is recorded while it runs, so that
// the next start ends what it left (EndOrphans). On Windows only the
// agent process itself is killed; its descendants may survive.
//
// Standard output is captured up to Runner.MaxStdout bytes (the rest is
// counted and flagged); for CLIs that stream JSON lines the reply is taken
// from the whole stream, line by line, so a long transcript does not lose the
// final answer. Standard error keeps a bounded tail.
//
// An agent that fails is not an error: Run returns a Result whose Outcome is
// failed, timeout or canceled with a short human Reason. Run returns an error
// only for a bad request or configuration.
//
// The running of the process (its group, environment and bounded output,
// the conversation on its input, orphaned groups) is internal/proc, and
// internal/livetext hands a plain agent's output over as it comes; the
// prompt's text is built by internal/prompt and bounded by
// internal/textbound; internal/argtemplate fills a command's argv, and
// internal/jsonpointer reads its JSON output.
//
// The subpackage fakeagent provides fake agent CLIs (the test binary
// re-executed) for tests here and in the packages that run agents.
package agentrun
