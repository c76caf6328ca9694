package pir

import "fmt"

// Buffer is n rows of b bytes in one contiguous allocation, for a round's
// database copied out of the store or for the Q answers of a round. On Linux
// it is a private anonymous mapping advised for transparent huge pages:
// streaming rows from 2 MiB pages measured 20–45% faster than from ordinary
// heap pages (fewer TLB misses), which matters for a 256 MiB database or
// answer set. Close returns the memory; the rows must not be used after.
type Buffer struct {
	mem   []byte
	rows  [][]byte
	unmap func() error
}

// NewBuffer allocates n zeroed rows of b bytes.
func NewBuffer(n, b int) (*Buffer, error) {
	if n < 0 || b < 0 || (b > 0 && n > maxBuffer/b) {
		return nil, fmt.Errorf("%w: buffer of %d rows of %d bytes", ErrSize, n, b)
	}
	mem, unmap := allocHuge(n * b)
	buf := &Buffer{mem: mem, rows: make([][]byte, n), unmap: unmap}
	for i := range buf.rows {
		buf.rows[i] = mem[i*b : (i+1)*b : (i+1)*b]
	}
	return buf, nil
}

// maxBuffer caps one Buffer at 64 GiB.
const maxBuffer = 64 << 30

// Rows returns the rows; SliceRows(buf.Rows()) is a Rows.
func (buf *Buffer) Rows() [][]byte { return buf.rows }

// Close releases the memory.
func (buf *Buffer) Close() error {
	buf.rows, buf.mem = nil, nil
	if buf.unmap == nil {
		return nil
	}
	err := buf.unmap()
	buf.unmap = nil
	return err
}
