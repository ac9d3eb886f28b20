package notify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// URL is the sink that POSTs each event to a URL in the style of ntfy
// (https://ntfy.sh/YOUR_TOPIC, or your own ntfy server): the body is the
// message, and the headers Title, Priority (1 to 5) and Tags (emoji names
// ntfy shows) say the rest. With a Token, an Authorization: Bearer header
// carries it (an ntfy access token). A redirect is not followed: the event
// goes to the address the user wrote, or nowhere.
type URL struct {
	URL   string
	Token string
	// Client sends the request (nil: a client that follows no redirect).
	Client *http.Client
}

// Name is "url".
func (URL) Name() string { return "url" }

// noRedirect is the default client of URL.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// Send POSTs e.
func (u URL) Send(ctx context.Context, e Event) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.URL, strings.NewReader(e.Message))
	if err != nil {
		return fmt.Errorf("notify: url: %w", err)
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	// A header is ASCII: a title that is not is sent as RFC 2047 words,
	// which ntfy decodes.
	req.Header.Set("Title", mime.QEncoding.Encode("utf-8", e.Title))
	prio, tags := ntfyStyle(e.Kind)
	req.Header.Set("Priority", prio)
	req.Header.Set("Tags", tags)
	if u.Token != "" {
		req.Header.Set("Authorization", "Bearer "+u.Token)
	}
	c := u.Client
	if c == nil {
		c = noRedirect
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("notify: url: %w", err)
	}
	body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxCommandOutput))
	cerr := resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("notify: url %s: the server answered %s: %s", redact(req), resp.Status, clean(string(body), maxCommandOutput))
	}
	if err := errors.Join(rerr, cerr); err != nil {
		return fmt.Errorf("notify: url: %w", err)
	}
	return nil
}

// redact is the request's URL without its user info or query, for a
// message.
func redact(r *http.Request) string {
	v := *r.URL
	v.User, v.RawQuery = nil, ""
	return v.String()
}

// ntfyStyle is the Priority and Tags headers of a kind: a question waits
// for the user (high), a failure or a pause is news (default).
func ntfyStyle(k Kind) (priority, tags string) {
	switch k {
	case KindQuestion:
		return "4", "question,knotd"
	case KindFailed:
		return "3", "x,knotd"
	case KindPaused:
		return "3", "pause_button,knotd"
	}
	return "3", "bell,knotd"
}
