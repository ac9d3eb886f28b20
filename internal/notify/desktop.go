package notify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/godbus/dbus/v5"
)

// Desktop returns the desktop's sink on this system: macOS's notification
// center through osascript, elsewhere the freedesktop notification server
// on the session D-Bus. Windows has none (an error says so).
func Desktop() (Sink, error) {
	switch runtime.GOOS {
	case "darwin":
		return Osascript{}, nil
	case "windows", "plan9", "js", "wasip1":
		return nil, fmt.Errorf("notify: desktop notifications are not available on %s; use notify: command or url", runtime.GOOS)
	}
	return DBus{}, nil
}

// DBus is the sink that shows each event as a freedesktop notification
// (org.freedesktop.Notifications.Notify on the session bus): what GNOME,
// KDE, dunst, mako and the other Linux desktops show.
type DBus struct {
	// Address is the session bus's address; "" finds it as a session
	// does: $DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus. No bus
	// is ever started (godbus would run dbus-launch).
	Address string
}

// Name is "desktop".
func (DBus) Name() string { return "desktop" }

// The freedesktop notification service.
const (
	notifyDest   = "org.freedesktop.Notifications"
	notifyPath   = dbus.ObjectPath("/org/freedesktop/Notifications")
	notifyMethod = "org.freedesktop.Notifications.Notify"
)

// sessionBus is the session bus's address, as DBus finds it.
func sessionBus() (string, error) {
	if a := os.Getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" && a != "autolaunch:" {
		return a, nil
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		p := filepath.Join(d, "bus")
		if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return "unix:path=" + dbus.EscapeBusAddressValue(p), nil
		}
	}
	return "", errors.New("no session bus: $DBUS_SESSION_BUS_ADDRESS is unset and there is no $XDG_RUNTIME_DIR/bus (knotd runs outside a desktop session; use notify: command or url)")
}

// Send shows e, connecting to the bus for it (a notification is rare; a
// bus restarted since the last one is no matter).
func (d DBus) Send(ctx context.Context, e Event) error {
	addr := d.Address
	if addr == "" {
		var err error
		if addr, err = sessionBus(); err != nil {
			return fmt.Errorf("notify: desktop: %w", err)
		}
	}
	// The connection's context closes it when ctx ends, even in the
	// middle of its authentication.
	conn, err := dbus.Connect(addr, dbus.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("notify: desktop: connect to the session bus: %w", err)
	}
	defer conn.Close()
	urgency := byte(1) // normal
	if e.Kind == KindQuestion {
		urgency = 2 // critical: it stays until seen, as the question waits
	}
	var id uint32
	err = conn.Object(notifyDest, notifyPath).CallWithContext(ctx, notifyMethod, 0,
		"knotd", uint32(0), "", e.Title, bodyMarkup(e.Message), []string{},
		map[string]dbus.Variant{"urgency": dbus.MakeVariant(urgency)}, int32(-1)).Store(&id)
	if err != nil {
		return fmt.Errorf("notify: desktop: %w", err)
	}
	return nil
}

// bodyMarkup escapes the markup a notification server may read in a
// body (the specification's body-markup: <b>, <a href>, entities).
func bodyMarkup(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// Osascript is the sink that shows each event in macOS's notification
// center: osascript -e 'display notification "…" with title "knotd" subtitle "…"'.
type Osascript struct {
	// Program is osascript ("" means /usr/bin/osascript).
	Program string
}

// Name is "desktop".
func (Osascript) Name() string { return "desktop" }

// Send runs osascript for e.
func (o Osascript) Send(ctx context.Context, e Event) error {
	argv := osascriptArgv(o.Program, e)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out bounded
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if s := strings.TrimSpace(out.String()); s != "" {
			err = fmt.Errorf("%w; it said: %s", err, s)
		}
		return fmt.Errorf("notify: desktop: osascript: %w", err)
	}
	return nil
}

// osascriptArgv is the command that shows e: the program, -e and one
// AppleScript statement whose strings are e's message and title as
// AppleScript string literals (appleString), so that nothing in them is
// ever read as script.
func osascriptArgv(program string, e Event) []string {
	if program == "" {
		program = "/usr/bin/osascript"
	}
	script := "display notification " + appleString(e.Message) + " with title " + appleString(e.Title)
	return []string{program, "-e", script}
}

// appleString is s as an AppleScript string literal: in double quotes,
// with each backslash and double quote escaped by a backslash. Control
// characters (a newline would end the statement in some readings) were
// made spaces by clean; any left are made spaces here too.
func appleString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '\\' || r == '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
