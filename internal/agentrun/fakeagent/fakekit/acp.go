package fakekit

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// ACPConn is a fake ACP agent's side of its connection to the client:
// JSON-RPC 2.0 messages, one a line, read from standard input and written
// to standard output.
type ACPConn struct {
	inv    *Invocation
	in     *bufio.Scanner
	enc    *json.Encoder
	log    io.Writer // gets every line read; nil for none
	nextID int
}

// ACPMessage is a message a fake ACP agent reads: a request or a
// notification of the client, or the client's answer to a request of the
// agent's.
type ACPMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		SessionID string `json:"sessionId"`
		Prompt    []struct {
			Text string `json:"text"`
		} `json:"prompt"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// PromptText returns the text of m's prompt.
func (m ACPMessage) PromptText() string {
	text := ""
	for _, p := range m.Params.Prompt {
		text += p.Text
	}
	return text
}

// NewACPConn returns the connection of the fake inv runs as. log, when not
// nil, gets every line read, newline included.
func NewACPConn(inv *Invocation, log io.Writer) *ACPConn {
	in := bufio.NewScanner(inv.Stdin)
	in.Buffer(nil, 64<<20)
	return &ACPConn{inv: inv, in: in, enc: json.NewEncoder(inv.Stdout), log: log}
}

// Send writes m, with "jsonrpc": "2.0", as one line.
func (c *ACPConn) Send(m map[string]any) {
	m["jsonrpc"] = "2.0"
	if err := c.enc.Encode(m); err != nil {
		fmt.Fprintf(c.inv.Stderr, "fakeagent: write: %v\n", err)
	}
}

// Update sends the session/update notification u for session.
func (c *ACPConn) Update(session string, u map[string]any) {
	c.Send(map[string]any{"method": "session/update", "params": map[string]any{"sessionId": session, "update": u}})
}

// ACPText is a session update of kind (agent_message_chunk…) whose
// content is the text s.
func ACPText(kind, s string) map[string]any {
	return map[string]any{"sessionUpdate": kind, "content": map[string]any{"type": "text", "text": s}}
}

// Read reads the next message; ok is false when the input has ended (Err
// says whether it failed). A line that is no message is reported on
// standard error and returned as err, with m as far as it was parsed.
func (c *ACPConn) Read() (m ACPMessage, ok bool, err error) {
	if !c.in.Scan() {
		return m, false, nil
	}
	if c.log != nil {
		if _, err := c.log.Write(append(append([]byte(nil), c.in.Bytes()...), '\n')); err != nil {
			fmt.Fprintf(c.inv.Stderr, "fakeagent: log: %v\n", err)
		}
	}
	if err := json.Unmarshal(c.in.Bytes(), &m); err != nil {
		fmt.Fprintf(c.inv.Stderr, "fakeagent: bad message %q: %v\n", c.in.Bytes(), err)
		return m, true, err
	}
	return m, true, nil
}

// Err returns the error that ended the input, nil for its end.
func (c *ACPConn) Err() error { return c.in.Err() }

// Call sends a request (id "fake-N") to the client and returns its
// answer, skipping the messages read before it: the result, or the error's
// message ("input ended" when the input ends first).
func (c *ACPConn) Call(method string, params map[string]any) (json.RawMessage, string) {
	c.nextID++
	id := "fake-" + strconv.Itoa(c.nextID)
	c.Send(map[string]any{"id": id, "method": method, "params": params})
	for {
		m, ok, _ := c.Read()
		if !ok {
			return nil, "input ended"
		}
		if string(m.ID) == strconv.Quote(id) && m.Method == "" {
			if m.Error != nil {
				var e struct{ Message string }
				_ = json.Unmarshal(m.Error, &e)
				return nil, e.Message
			}
			return m.Result, ""
		}
	}
}

// AskPermission sends session/request_permission for toolCall in session,
// offering options, and returns the optionId the client selected, or the
// outcome when it selected none ("cancelled").
func (c *ACPConn) AskPermission(session string, options []any, toolCall map[string]any) (string, error) {
	res, errMsg := c.Call("session/request_permission", map[string]any{
		"sessionId": session,
		"options":   options,
		"toolCall":  toolCall,
	})
	var a struct {
		Outcome struct {
			Outcome  string `json:"outcome"`
			OptionID string `json:"optionId"`
		} `json:"outcome"`
	}
	if errMsg != "" || json.Unmarshal(res, &a) != nil {
		return "", fmt.Errorf("permission answer %s: %s", res, errMsg)
	}
	if a.Outcome.Outcome != "selected" {
		return a.Outcome.Outcome, nil
	}
	return a.Outcome.OptionID, nil
}

// Unknown answers a request whose method the fake does not offer with
// JSON-RPC's "Method not found"; it ignores a notification.
func (c *ACPConn) Unknown(m ACPMessage) {
	if m.Method != "" && m.ID != nil {
		c.Send(map[string]any{"id": m.ID, "error": map[string]any{"code": -32601, "message": "Method not found: " + m.Method}})
	}
}

// Finish ends the fake's run once its input has ended: it returns the
// error that ended the input, if any, or records the fake's call with the
// prompt it received (see Invocation.Save).
func (c *ACPConn) Finish(received string) error {
	if err := c.Err(); err != nil {
		return err
	}
	return c.inv.Save(received)
}
