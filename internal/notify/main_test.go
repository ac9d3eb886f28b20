package notify

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"testing"
	"time"
)

// The test binary is also the notify command of the command sink's tests:
// with envFake set it reads the event on stdin and does what envFake says.
const (
	envFake = "KNOTD_NOTIFY_FAKE" // record | args | fail | hang
	envOut  = "KNOTD_NOTIFY_OUT"  // record: the file each event is appended to; args: the file of its argv as JSON
)

func TestMain(m *testing.M) {
	switch os.Getenv(envFake) {
	case "":
		os.Exit(m.Run())
	case "record":
		in, err := io.ReadAll(os.Stdin)
		if err != nil {
			os.Exit(2)
		}
		f, err := os.OpenFile(os.Getenv(envOut), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			os.Exit(2)
		}
		_, err = f.Write(in)
		if cerr := f.Close(); err != nil || cerr != nil {
			os.Exit(2)
		}
		fmt.Println(os.Args[1:])
		os.Exit(0)
	case "args":
		data, err := json.Marshal(os.Args[1:])
		if err != nil || os.WriteFile(os.Getenv(envOut), data, 0o600) != nil {
			os.Exit(2)
		}
		os.Exit(0)
	case "fail":
		fmt.Fprintln(os.Stderr, "no route to the pager")
		os.Exit(3)
	case "hang":
		_, _ = io.ReadAll(os.Stdin)
		time.Sleep(time.Hour) // killed by the send's timeout
		os.Exit(0)
	}
	os.Exit(4)
}
