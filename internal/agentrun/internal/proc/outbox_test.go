package proc

import (
	"errors"
	"testing"
)

// TestOutbox_Bounded: answers an agent does not read fill the outbox up to
// maxOutbox; then it fails and is closed.
func TestOutbox_Bounded(t *testing.T) {
	o := newOutbox([][]byte{[]byte("first")})
	msg := make([]byte, 64<<10)
	var err error
	for i := 0; i < maxOutbox/len(msg)+2 && err == nil; i++ {
		err = o.push([][]byte{msg}, false)
	}
	if !errors.Is(err, errOutboxFull) {
		t.Fatalf("push past maxOutbox = %v; want errOutboxFull", err)
	}
	if msgs, closed, err := o.take(); len(msgs) != 0 || !closed || !errors.Is(err, errOutboxFull) {
		t.Errorf("take = %d messages, closed %v, %v; want none, closed, errOutboxFull", len(msgs), closed, err)
	}
}
