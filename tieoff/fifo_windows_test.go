//go:build windows

package tieoff

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs on Windows") }
