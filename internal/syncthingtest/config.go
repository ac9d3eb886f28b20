package syncthingtest

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/knotd/knotd/internal/vaultfs"
)

// FolderID is the ID (and label) of the folder the two devices share.
const FolderID = "vault"

// Folder settings that make a change reach the other device within
// seconds: the watcher reports a change after a second, and a full rescan
// catches whatever the watcher missed.
const (
	watcherDelayS  = 1
	rescanInterval = 10
)

// xmlNode is one element of Syncthing's config.xml, kept whole: editing
// the generated file in place keeps every default that Syncthing wrote
// (a folder missing <maxConflicts> would get 0, which means "no conflict
// copies", not Syncthing's default of 10).
type xmlNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Nodes   []*xmlNode `xml:",any"`
}

// readConfig parses home's config.xml.
func readConfig(home string) (*xmlNode, error) {
	path := filepath.Join(home, "config.xml")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read syncthing config: %w", err)
	}
	var root xmlNode
	if err := xml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	if root.XMLName.Local != "configuration" {
		return nil, fmt.Errorf("parse %s: root element is <%s>, not <configuration>", path, root.XMLName.Local)
	}
	root.trim()
	return &root, nil
}

// writeConfig replaces home's config.xml with root.
func writeConfig(home string, root *xmlNode) error {
	data, err := xml.MarshalIndent(root, "", "    ")
	if err != nil {
		return fmt.Errorf("encode syncthing config: %w", err)
	}
	data = append(data, '\n')
	dir, err := os.OpenRoot(home)
	if err != nil {
		return fmt.Errorf("write syncthing config: %w", err)
	}
	defer dir.Close() // a directory handle: nothing written through it
	if err := vaultfs.Replace(dir, "config.xml", data, vaultfs.ReplaceOptions{Perm: 0o600}); err != nil {
		return fmt.Errorf("write syncthing config: %w", err)
	}
	return nil
}

// trim drops the indentation between elements, which MarshalIndent
// writes anew.
func (n *xmlNode) trim() {
	if len(n.Nodes) > 0 && strings.TrimSpace(n.Text) == "" {
		n.Text = ""
	}
	for _, c := range n.Nodes {
		c.trim()
	}
}

// clone returns a deep copy of n.
func (n *xmlNode) clone() *xmlNode {
	c := &xmlNode{XMLName: n.XMLName, Text: n.Text}
	c.Attrs = append([]xml.Attr(nil), n.Attrs...)
	for _, k := range n.Nodes {
		c.Nodes = append(c.Nodes, k.clone())
	}
	return c
}

// attr returns the value of n's attribute name, or "".
func (n *xmlNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// setAttr sets n's attribute name to value, adding it if n has none.
func (n *xmlNode) setAttr(name, value string) {
	for i, a := range n.Attrs {
		if a.Name.Local == name {
			n.Attrs[i].Value = value
			return
		}
	}
	n.Attrs = append(n.Attrs, xml.Attr{Name: xml.Name{Local: name}, Value: value})
}

// child returns n's first child element called name, or nil.
func (n *xmlNode) child(name string) *xmlNode {
	for _, c := range n.Nodes {
		if c.XMLName.Local == name {
			return c
		}
	}
	return nil
}

// children returns n's child elements called name.
func (n *xmlNode) children(name string) []*xmlNode {
	var cs []*xmlNode
	for _, c := range n.Nodes {
		if c.XMLName.Local == name {
			cs = append(cs, c)
		}
	}
	return cs
}

// removeChildren drops n's child elements called name.
func (n *xmlNode) removeChildren(name string) {
	kept := n.Nodes[:0]
	for _, c := range n.Nodes {
		if c.XMLName.Local != name {
			kept = append(kept, c)
		}
	}
	n.Nodes = kept
}

// set makes value the text of n's one child element called name: the
// first such child is kept (with its attributes), any others are dropped,
// and one is added if n has none.
func (n *xmlNode) set(name, value string) {
	var first *xmlNode
	kept := n.Nodes[:0]
	for _, c := range n.Nodes {
		if c.XMLName.Local == name {
			if first != nil {
				continue
			}
			first = c
		}
		kept = append(kept, c)
	}
	n.Nodes = kept
	if first == nil {
		first = &xmlNode{XMLName: xml.Name{Local: name}}
		n.Nodes = append(n.Nodes, first)
	}
	first.Text, first.Nodes = value, nil
}

// insertAfterLast inserts c after n's last child element called name, or
// at the end when there is none.
func (n *xmlNode) insertAfterLast(name string, c *xmlNode) {
	at := len(n.Nodes)
	for i, k := range n.Nodes {
		if k.XMLName.Local == name {
			at = i + 1
		}
	}
	n.Nodes = append(n.Nodes, nil)
	copy(n.Nodes[at+1:], n.Nodes[at:])
	n.Nodes[at] = c
}

// configure turns the config.xml that `syncthing generate` wrote into
// home into the configuration of d as one device of a pair with peer:
// d's GUI and sync addresses, peer as a known device (at its explicit
// address if d is the dialer), the shared folder, and every way of
// reaching beyond loopback switched off.
func configure(home string, d, peer *Device) error {
	root, err := readConfig(home)
	if err != nil {
		return err
	}
	defaults := root.child("defaults")
	if defaults == nil || defaults.child("folder") == nil || defaults.child("device") == nil {
		return fmt.Errorf("%s/config.xml has no <defaults> with a <folder> and a <device>; is this Syncthing %s?", home, VersionSeries)
	}

	var self *xmlNode
	for _, dev := range root.children("device") {
		if dev.attr("id") == d.ID {
			self = dev
		}
	}
	if self == nil {
		return fmt.Errorf("%s/config.xml has no <device> for its own ID %s", home, d.ID)
	}
	self.setAttr("name", d.Name)

	other := defaults.child("device").clone()
	other.setAttr("id", peer.ID)
	other.setAttr("name", peer.Name)
	// Only A dials (see Device.dialer): B knows A by ID alone, and with
	// discovery off "dynamic" resolves to no address at all.
	if d.dialer {
		other.set("address", peer.SyncAddr)
	} else {
		other.set("address", "dynamic")
	}
	other.set("paused", "false")
	other.set("autoAcceptFolders", "false")
	root.insertAfterLast("device", other)

	folder := defaults.child("folder").clone()
	folder.setAttr("id", FolderID)
	folder.setAttr("label", FolderID)
	folder.setAttr("path", d.Dir)
	folder.setAttr("type", "sendreceive")
	folder.setAttr("rescanIntervalS", strconv.Itoa(rescanInterval))
	folder.setAttr("fsWatcherEnabled", "true")
	folder.setAttr("fsWatcherDelayS", strconv.Itoa(watcherDelayS))
	member := folder.child("device")
	if member == nil {
		member = &xmlNode{XMLName: xml.Name{Local: "device"}}
	}
	folder.removeChildren("device")
	for _, id := range []string{d.ID, peer.ID} {
		m := member.clone()
		m.setAttr("id", id)
		m.setAttr("introducedBy", "")
		folder.Nodes = append([]*xmlNode{m}, folder.Nodes...)
	}
	folder.set("paused", "false")
	// A nearly full disk must not stop a test's sync.
	folder.set("minDiskFree", "0")
	root.Nodes = append([]*xmlNode{folder}, root.Nodes...)

	gui := root.child("gui")
	if gui == nil {
		gui = &xmlNode{XMLName: xml.Name{Local: "gui"}}
		root.insertAfterLast("device", gui)
	}
	gui.setAttr("enabled", "true")
	gui.setAttr("tls", "false")
	gui.set("address", d.guiHostPort())
	gui.set("apikey", d.APIKey)

	opts := root.child("options")
	if opts == nil {
		opts = &xmlNode{XMLName: xml.Name{Local: "options"}}
		root.insertAfterLast("gui", opts)
	}
	for _, kv := range [][2]string{
		{"listenAddress", d.SyncAddr},
		{"globalAnnounceEnabled", "false"},
		{"localAnnounceEnabled", "false"},
		{"relaysEnabled", "false"},
		{"natEnabled", "false"},
		{"announceLANAddresses", "false"},
		{"startBrowser", "false"},
		{"urAccepted", "-1"}, // usage reporting declined
		{"urSeen", "3"},
		{"crashReportingEnabled", "false"},
		{"autoUpgradeIntervalH", "0"},
		{"restartOnWakeup", "false"},
		{"setLowPriority", "false"},
		// The shortest Syncthing accepts: a device that comes back is
		// dialled again within seconds.
		{"reconnectionIntervalS", "5"},
		{"minHomeDiskFree", "0"},
	} {
		opts.set(kv[0], kv[1])
	}
	opts.removeChildren("unackedNotificationID")

	return writeConfig(home, root)
}

// ownDeviceID reads the ID of the only device in a freshly generated
// config.xml in home.
func ownDeviceID(home string) (string, error) {
	root, err := readConfig(home)
	if err != nil {
		return "", err
	}
	devs := root.children("device")
	if len(devs) != 1 || devs[0].attr("id") == "" {
		return "", fmt.Errorf("%s/config.xml: want exactly one <device> with an id after generate, have %d", home, len(devs))
	}
	return devs[0].attr("id"), nil
}
