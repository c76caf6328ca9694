package proto

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/sigcache"
	"github.com/riffle-net/riffle/internal/wire"
)

// Domain tags of the hashes the servers sign (docs/proto-node.md).
const (
	TagEpochID   = "riffle/v2/epoch-id"
	TagDescOpen  = "riffle/v3/descriptor-open"
	TagDescFinal = "riffle/v3/descriptor-final"
	TagStep      = "riffle/v2/step"
	TagRegister  = "riffle/v2/register"
	TagList      = "riffle/v2/request-list"
	TagMerkleLf  = "riffle/v2/merkle-leaf"
	TagMerkleLfP = "riffle/v3/merkle-leaf-payload"
	TagMerkleNd  = "riffle/v2/merkle-node"
	TagBatch     = "riffle/v2/batch"
)

// TaggedHash is SHA-256 over a tag and u32-length-prefixed parts, streamed
// into the hash (parts may be whole onions: no copy).
func TaggedHash(tag string, parts ...[]byte) [32]byte {
	h := sha256.New()
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(len(tag)))
	h.Write(l[:])
	h.Write([]byte(tag))
	for _, p := range parts {
		binary.BigEndian.PutUint32(l[:], uint32(len(p)))
		h.Write(l[:])
		h.Write(p)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// MerkleRoot is the root of a binary Merkle tree over entries (§5.2), each
// leaf H(leaf tag, u32 position, entry), each node H(node tag, left, right),
// an odd node promoted unchanged; the root of no entries is H(leaf tag).
func MerkleRoot(entries [][]byte) [32]byte {
	level := make([][32]byte, len(entries))
	for i, e := range entries {
		level[i] = TaggedHash(TagMerkleLf, LeafPos(i), e)
	}
	return MerkleUp(level)
}

// LeafPos is a leaf's position as the leaf hash takes it: u32, big-endian.
func LeafPos(i int) []byte {
	var pos wire.Enc
	pos.U32(uint32(i))
	return pos.B
}

// MerkleUp hashes a level of leaves up to the root.
func MerkleUp(level [][32]byte) [32]byte {
	if len(level) == 0 {
		return TaggedHash(TagMerkleLf)
	}
	for len(level) > 1 {
		next := level[:0:0]
		for i := 0; i < len(level); i += 2 {
			if i+1 == len(level) {
				next = append(next, level[i])
				continue
			}
			next = append(next, TaggedHash(TagMerkleNd, level[i][:], level[i+1][:]))
		}
		level = next
	}
	return level[0]
}

// Sign signs a 32-byte digest with the host's Ed25519 identity key.
func Sign(priv crypto.PrivKey, digest [32]byte) ([64]byte, error) {
	var out [64]byte
	s, err := priv.Sign(digest[:])
	if err != nil {
		return out, fmt.Errorf("node: sign: %w", err)
	}
	if len(s) != 64 {
		return out, fmt.Errorf("node: signature of %d bytes, want 64", len(s))
	}
	copy(out[:], s)
	return out, nil
}

// VerifyPeerSig checks an Ed25519 signature by the identity key of id.
// A signature that verified before in this process is not verified again
// (internal/sigcache).
func VerifyPeerSig(id peer.ID, digest [32]byte, sig [64]byte) error {
	k := sigcache.Key("peer", []byte(id), digest[:], sig[:])
	if sigcache.Seen(k) {
		return nil
	}
	pub, err := id.ExtractPublicKey()
	if err != nil {
		return fmt.Errorf("node: public key of %s: %w", id, err)
	}
	if pub.Type() != crypto.Ed25519 {
		return fmt.Errorf("node: peer %s key is %v, want Ed25519", id, pub.Type())
	}
	ok, err := pub.Verify(digest[:], sig[:])
	if err != nil || !ok {
		return fmt.Errorf("node: bad signature by %s", id)
	}
	sigcache.Add(k)
	return nil
}
