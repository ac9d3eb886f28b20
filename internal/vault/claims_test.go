package vault

import (
	"testing"
	"testing/synctest"
)

// TestClaims: a held path cannot be claimed again until it is released;
// claim waits for it, tryClaim does not.
func TestClaims(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c claims
		c.claim("a.md")
		if c.tryClaim("a.md") {
			t.Fatal("tryClaim of a held path succeeded")
		}
		if !c.tryClaim("b.md") {
			t.Fatal("tryClaim of a free path failed")
		}
		got := make(chan bool)
		go func() {
			c.claim("a.md")
			got <- true
		}()
		synctest.Wait() // the goroutine is blocked in claim
		select {
		case <-got:
			t.Fatal("claim of a held path did not wait")
		default:
		}
		c.release("a.md")
		<-got
		c.release("a.md")
		c.release("b.md")
		if !c.tryClaim("a.md") || !c.tryClaim("b.md") {
			t.Error("released paths cannot be claimed")
		}
	})
}
