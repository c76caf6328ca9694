// Command riffle is the one binary of the riffle anonymous file-sharing
// network: it runs servers, clients, the demo and the benchmarks.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := newApp().Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "riffle: %v\n", err)
		os.Exit(1)
	}
}
