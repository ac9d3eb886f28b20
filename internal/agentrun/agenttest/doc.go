// Package agenttest is what the agents' test packages share to run real
// agent CLIs against loopback stand-ins for the model APIs they call, in
// the spirit of net/http/httptest: the stand-ins' skeleton (StandIn, API),
// the model's replies and tool calls (Reply, ToolCall, CallTool), the
// conversation a request carries (Message, Block), and finding a pinned
// real CLI (RealCLI). Each agent's own stand-in and CLI helper live in its
// folder: claudetest (Anthropic Messages API, Claude Code), codextest
// (OpenAI Responses API, Codex CLI), geminitest (Gemini API, Gemini CLI),
// claudeacptest, codexacptest and opencodetest. The subpackage realcli is
// the setup the agents' real-CLI tests of the Runner share.
package agenttest
