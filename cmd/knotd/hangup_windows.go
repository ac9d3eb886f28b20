package main

import "os"

// Windows sends no SIGHUP.
var hangUpSignals []os.Signal
