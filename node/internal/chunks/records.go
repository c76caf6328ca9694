package chunks

import "github.com/riffle-net/riffle/store"

// The server's records beside its chunks, kept by the bbolt store only:
// long-term key records (node/internal/ltkeys's Recorder), blame records
// (node/internal/roundblame's Recorder) and a primary's client strikes
// (clientStriker, roundblame_after.go).

func (b *BoltStore) PutKeyExclusion(k [32]byte, x store.KeyExclusion) error {
	return b.st.PutKeyExclusion(k, x)
}
func (b *BoltStore) KeyExclusions() (map[[32]byte]store.KeyExclusion, error) {
	return b.st.KeyExclusions()
}
func (b *BoltStore) PutKeySeen(k [32]byte, r store.KeySeen) error { return b.st.PutKeySeen(k, r) }
func (b *BoltStore) DeleteKeySeen(k [32]byte) error               { return b.st.DeleteKeySeen(k) }
func (b *BoltStore) KeysSeen() (map[[32]byte]store.KeySeen, error) {
	return b.st.KeysSeen()
}

func (b *BoltStore) PutBlame(rec store.BlameRecord) error { return b.st.PutBlame(rec) }
func (b *BoltStore) Blames() ([]store.BlameRecord, error) { return b.st.Blames() }

func (b *BoltStore) PutClientStrike(k string, x store.ClientStrike) (store.ClientStrike, error) {
	return b.st.PutClientStrike(k, x)
}
func (b *BoltStore) ClientStrikes() (map[string]store.ClientStrike, error) {
	return b.st.ClientStrikes()
}
