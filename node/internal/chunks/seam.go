package chunks

// The tests' view of an in-memory store, beyond the Store interface.

// ForgetChunks drops every chunk held: a server whose store lacks what the
// others hold.
func (m *MemStore) ForgetChunks() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.chunks)
}

// Sizes returns the numbers of request lists, chunks and index entries
// held: what a hostile message must leave as it was.
func (m *MemStore) Sizes() (lists, chunks, index int) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.lists), len(m.chunks), len(m.index)
}
