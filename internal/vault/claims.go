package vault

import "sync"

// claims are the strand paths being worked on: the processor holds its
// strand's path for a whole run, and moving a record holds both paths, so
// that a move never takes the record of a strand while it is processed.
// The zero value is ready.
type claims struct {
	mu   sync.Mutex
	cond sync.Cond
	held map[string]bool
}

// claim waits until rel is free and holds it.
func (c *claims) claim(rel string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cond.L = &c.mu
	for c.held[rel] {
		c.cond.Wait()
	}
	if c.held == nil {
		c.held = make(map[string]bool)
	}
	c.held[rel] = true
}

// tryClaim holds rel if it is free and reports whether it did.
func (c *claims) tryClaim(rel string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[rel] {
		return false
	}
	if c.held == nil {
		c.held = make(map[string]bool)
	}
	c.held[rel] = true
	return true
}

// release frees rel.
func (c *claims) release(rel string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.held, rel)
	c.cond.L = &c.mu
	c.cond.Broadcast()
}
