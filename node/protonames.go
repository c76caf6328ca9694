package node

import (
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// The names by which package node's files use what moved to
// node/internal/proto, so that the move changed no caller. They go once
// the server and the client are packages of their own that import proto.

// Domain tags (proto.Tag*).
const (
	tagEpochID   = proto.TagEpochID
	tagDescOpen  = proto.TagDescOpen
	tagDescFinal = proto.TagDescFinal
	tagStep      = proto.TagStep
	tagRegister  = proto.TagRegister
	tagList      = proto.TagList
	tagMerkleLf  = proto.TagMerkleLf
	tagMerkleLfP = proto.TagMerkleLfP
	tagMerkleNd  = proto.TagMerkleNd
	tagBatch     = proto.TagBatch
)

func taggedHash(tag string, parts ...[]byte) [32]byte { return proto.TaggedHash(tag, parts...) }
func merkleRoot(entries [][]byte) [32]byte            { return proto.MerkleRoot(entries) }
func merkleUp(level [][32]byte) [32]byte              { return proto.MerkleUp(level) }
func leafPos(i int) []byte                            { return proto.LeafPos(i) }

func sign(priv crypto.PrivKey, digest [32]byte) ([64]byte, error) { return proto.Sign(priv, digest) }
func verifyPeerSig(id peer.ID, digest [32]byte, sig [64]byte) error {
	return proto.VerifyPeerSig(id, digest, sig)
}

// The request list's cut (§5.3, §6.3 v3).
func listStart(epoch [32]byte, round uint32, n int) int { return proto.ListStart(epoch, round, n) }
func roundRobinCut(q0 int, byPos [][][32]byte, held func([32]byte) bool, maxRows int) [][32]byte {
	return proto.RoundRobinCut(q0, byPos, held, maxRows)
}
func listPairs(byPos [][][32]byte, entries []wire.ListEntry) []wire.ListPair {
	return proto.ListPairs(byPos, entries)
}
func samePairs(a, b []wire.ListPair) bool { return proto.SamePairs(a, b) }
