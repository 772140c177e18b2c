// Command pause is the sandbox (pause) image's only program for the
// end-to-end suite: no registry is reachable, so the image is built locally.
// It waits for SIGTERM or SIGINT and exits 0; as PID 1 of a pod sandbox it
// also reaps orphaned children on SIGCHLD.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for received := range signals {
		if received != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
