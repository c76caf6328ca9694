package chunks

import (
	"fmt"

	"github.com/riffle-net/riffle/store"
)

// The public demand of rounds and the closing records of epochs in the
// in-memory store (store/demand.go is the bbolt one).

func RoundKey36(epoch [32]byte, round uint32) [36]byte {
	var k [36]byte
	copy(k[:], epoch[:])
	k[32], k[33], k[34], k[35] = byte(round>>24), byte(round>>16), byte(round>>8), byte(round)
	return k
}

func (m *MemStore) PutPairs(epoch [32]byte, round uint32, ps []store.Pair) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pairs == nil {
		m.pairs = map[[36]byte][]store.Pair{}
	}
	m.pairs[RoundKey36(epoch, round)] = append([]store.Pair(nil), ps...)
	return nil
}

func (m *MemStore) PutClosing(epoch [32]byte, rec []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closings == nil {
		m.closings = map[[32]byte][]byte{}
	}
	if old, ok := m.closings[epoch]; ok {
		if string(old) != string(rec) {
			return fmt.Errorf("%w: another closing record of epoch %x", store.ErrConflict, epoch[:6])
		}
		return nil
	}
	m.closings[epoch] = append([]byte(nil), rec...)
	m.log = append(m.log, memChange{id: epoch, closing: true})
	return nil
}

func (m *MemStore) Closing(epoch [32]byte) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	rec, ok := m.closings[epoch]
	if !ok {
		return nil, store.ErrNotFound
	}
	return append([]byte(nil), rec...), nil
}

func (b *BoltStore) PutPairs(epoch [32]byte, round uint32, ps []store.Pair) error {
	return b.st.PutPairs(epoch, round, ps)
}

func (b *BoltStore) PutClosing(epoch [32]byte, rec []byte) error { return b.st.PutClosing(epoch, rec) }

func (b *BoltStore) Closing(epoch [32]byte) ([]byte, error) { return b.st.Closing(epoch) }

func (m *MemStore) PutWindowItem(number uint64, epoch [32]byte, item []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.window == nil {
		m.window = map[[32]byte][]byte{}
	}
	m.window[epoch] = append([]byte(nil), item...)
	return nil
}

func (m *MemStore) WindowItem(_ uint64, epoch [32]byte) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	b, ok := m.window[epoch]
	if !ok {
		return nil, store.ErrNotFound
	}
	return append([]byte(nil), b...), nil
}

func (b *BoltStore) PutWindowItem(number uint64, epoch [32]byte, item []byte) error {
	return b.st.PutWindowItem(number, epoch, item)
}

func (b *BoltStore) WindowItem(number uint64, epoch [32]byte) ([]byte, error) {
	return b.st.WindowItem(number, epoch)
}

func (m *MemStore) PutList(epoch [32]byte, round uint32, list []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.finals == nil {
		m.finals = map[[36]byte][]byte{}
	}
	k := RoundKey36(epoch, round)
	if old, ok := m.finals[k]; ok {
		if string(old) != string(list) {
			return fmt.Errorf("%w: another list of round %d", store.ErrConflict, round)
		}
		return nil
	}
	m.finals[k] = append([]byte(nil), list...)
	return nil
}

func (m *MemStore) List(epoch [32]byte, round uint32) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	b, ok := m.finals[RoundKey36(epoch, round)]
	if !ok {
		return nil, store.ErrNotFound
	}
	return append([]byte(nil), b...), nil
}

func (m *MemStore) CatchupCursor(peer []byte) (uint64, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.cursors[string(peer)], nil
}

func (m *MemStore) PutCatchupCursor(peer []byte, n uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cursors == nil {
		m.cursors = map[string]uint64{}
	}
	m.cursors[string(peer)] = n
	return nil
}

func (b *BoltStore) PutList(epoch [32]byte, round uint32, list []byte) error {
	return b.st.PutList(epoch, round, list)
}

func (b *BoltStore) List(epoch [32]byte, round uint32) ([]byte, error) {
	return b.st.List(epoch, round)
}

func (b *BoltStore) CatchupCursor(peer []byte) (uint64, error) { return b.st.CatchupCursor(peer) }

func (b *BoltStore) PutCatchupCursor(peer []byte, n uint64) error {
	return b.st.PutCatchupCursor(peer, n)
}
