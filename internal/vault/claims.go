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

// sessionClaims are the sessions of the runs being prepared or under way,
// each with its strand: two strands never run with one session, even
// before either run is recorded (notes copied from one template and run
// at once). The zero value is ready.
type sessionClaims struct {
	mu   sync.Mutex
	held map[string]string // session → strand path
}

// claim holds the session id for the strand rel, unless another strand
// holds it, and reports whether rel holds it now.
func (c *sessionClaims) claim(id, rel string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if owner, ok := c.held[id]; ok {
		return owner == rel
	}
	if c.held == nil {
		c.held = make(map[string]string)
	}
	c.held[id] = rel
	return true
}

// release lets go of every session the strand rel holds.
func (c *sessionClaims) release(rel string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, owner := range c.held {
		if owner == rel {
			delete(c.held, id)
		}
	}
}
