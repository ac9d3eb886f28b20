//go:build !(linux || darwin)

package tieoff

import (
	"fmt"
	"os"
)

func runHelper(name string) {
	fmt.Println("no helper", name, "on this platform")
	os.Exit(2)
}
