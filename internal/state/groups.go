package state

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Group is the process group of an agent that runs (see the vault's
// agentGroups and agentrun.Group): recorded when it starts, removed when
// its run ends, so that what a knotd killed meanwhile recorded is found at
// the next start.
type Group struct {
	ID    int    // the group id
	Start uint64 // its leader's start time
	Boot  string // the boot it ran in
	Run   string // the run id
}

// maxGroupText bounds a group's boot id and run id.
const maxGroupText = 256

// PutGroup records a running agent's process group. The bucket is made by
// the first group recorded; the schema stays 2 (an older knotd ignores
// it).
func (tx *Tx) PutGroup(g Group) error {
	if g.ID <= 0 || len(g.Boot) > maxGroupText || len(g.Run) > maxGroupText || !utf8.ValidString(g.Boot) || !utf8.ValidString(g.Run) {
		return fmt.Errorf("state: process group %d: not a group to record", g.ID)
	}
	if tx.groups == nil {
		b, err := tx.tx.CreateBucket(bucketGroups)
		if err != nil {
			return fmt.Errorf("state: process group %d: %w", g.ID, err)
		}
		tx.groups = b
	}
	v := binary.AppendUvarint(nil, g.Start)
	v = binary.AppendUvarint(v, uint64(len(g.Boot)))
	v = append(append(v, g.Boot...), g.Run...)
	if err := tx.groups.Put([]byte(strconv.Itoa(g.ID)), v); err != nil {
		return fmt.Errorf("state: process group %d: %w", g.ID, err)
	}
	return nil
}

// DeleteGroup removes the record of the process group id.
func (tx *Tx) DeleteGroup(id int) error {
	key := []byte(strconv.Itoa(id))
	if tx.groups == nil || tx.groups.Get(key) == nil {
		return nil
	}
	if err := tx.groups.Delete(key); err != nil {
		return fmt.Errorf("state: process group %d: %w", id, err)
	}
	return nil
}

// Groups returns every recorded process group.
func (tx *Tx) Groups() ([]Group, error) {
	if tx.groups == nil {
		return nil, nil
	}
	var gs []Group
	err := tx.groups.ForEach(func(k, v []byte) error {
		g, err := decodeGroup(k, v)
		if err == nil {
			gs = append(gs, g)
		}
		return err
	})
	return gs, err
}

func decodeGroup(k, v []byte) (Group, error) {
	bad := fmt.Errorf("%w: process group %q: %w", ErrCorrupt, k, errCorruptValue)
	id, err := strconv.Atoi(string(k))
	if err != nil || id <= 0 || strconv.Itoa(id) != string(k) {
		return Group{}, bad
	}
	start, n := binary.Uvarint(v)
	if n <= 0 {
		return Group{}, bad
	}
	v = v[n:]
	l, n := binary.Uvarint(v)
	if n <= 0 || l > maxGroupText || l > uint64(len(v)-n) {
		return Group{}, bad
	}
	v = v[n:]
	g := Group{ID: id, Start: start, Boot: string(v[:l]), Run: string(v[l:])}
	if len(g.Run) > maxGroupText || !utf8.ValidString(g.Boot) || !utf8.ValidString(g.Run) {
		return Group{}, bad
	}
	return g, nil
}
