// Package durable makes changes to directories survive a crash: after a
// file is created in, renamed into or removed from a directory, syncing the
// directory itself is what makes the new name durable on Unix.
package durable
