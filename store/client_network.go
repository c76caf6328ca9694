package store

import (
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// metaNetwork is the meta key of the network record: the servers of the
// chain whose epochs the file's state (synced index, cursors, decoy
// window, sealed onions, interrupted shares) came from.
var metaNetwork = []byte("network")

// MaxNetworkServers bounds the network record (a chain has far fewer).
const MaxNetworkServers = 64

// PutNetwork records the servers (peer ids in bytes) of the chain the
// client took part in last.
func (c *ClientDB) PutNetwork(servers [][]byte) error {
	if len(servers) == 0 || len(servers) > MaxNetworkServers {
		return fmt.Errorf("store: network record of %d servers", len(servers))
	}
	b := []byte{byte(len(servers))}
	for _, s := range servers {
		if len(s) == 0 || len(s) > maxServerKey {
			return fmt.Errorf("store: network record: server id of %d bytes", len(s))
		}
		b = append(b, byte(len(s)))
		b = append(b, s...)
	}
	return c.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketClient).Put(metaNetwork, b) })
}

// Network returns the servers of the network record. A file written
// before the record has none: the servers it synced the index from stand
// for it then. Nil: the file holds no network's state.
func (c *ClientDB) Network() ([][]byte, error) {
	var out [][]byte
	err := c.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketClient).Get(metaNetwork)
		if v == nil {
			return tx.Bucket(bucketSyncCursors).ForEach(func(k, _ []byte) error {
				if len(out) < MaxNetworkServers {
					out = append(out, slices.Clone(k))
				}
				return nil
			})
		}
		n, rest := int(v[0]), v[1:]
		for range n {
			if len(rest) == 0 || int(rest[0]) == 0 || len(rest) < 1+int(rest[0]) {
				return fmt.Errorf("%w: network record", errCorrupt)
			}
			out = append(out, slices.Clone(rest[1:1+int(rest[0])]))
			rest = rest[1+int(rest[0]):]
		}
		if n == 0 || len(rest) != 0 {
			return fmt.Errorf("%w: network record", errCorrupt)
		}
		return nil
	})
	return out, err
}
