//go:build !unix

package chunker

// oNoFollow: no such flag here; the walk already left links out.
const oNoFollow = 0
