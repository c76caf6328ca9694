// Command riffle is the one binary of the riffle anonymous file-sharing
// network: it runs servers, clients, the demo and the benchmarks.
package main

import "os"

func main() {
	os.Exit(run(newApp(), os.Args, os.Stderr))
}
