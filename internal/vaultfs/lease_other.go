//go:build !linux

package vaultfs

import "os"

type leaseState int

const (
	leaseTaken leaseState = iota
	leaseBusy
	leaseUnsupported
)

// leasesHere says whether this system has file leases.
const leasesHere = false

// takeLease reports leaseUnsupported: this system has no file leases.
func takeLease(*os.File) (leaseState, error) { return leaseUnsupported, nil }

func leaseBroken(*os.File) (bool, error) { return false, nil }

func releaseLease(*os.File) error { return nil }
