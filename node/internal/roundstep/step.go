// Package roundstep is a round's steps at a server (docs/protocol.md
// §5.2, §5.3) that read no round state, as functions of the epoch's fixed
// facts and one event, after wireguard-go's handshake: a message in, a
// message out, no I/O. The checks of a batch's head, the root of a batch
// and the payloads' hashes of a publication, a failed layer's fault, the
// sealing of this server's output and the reading of a round's published
// payloads; the round's request list (§5.3, list.go): S_0's proposal, a
// signer's checks of it and of censorship, the chunks it fetches and the
// chain's signatures. None reads a clock, takes a lock or sends; package
// node's roundstep.go holds the steps over the round's state and its
// drivers (mixing.go, publish.go, censor.go) do the I/O the steps return.
package roundstep

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Facts is what a step reads of its epoch: fixed once the final
// descriptor is in, so read without the server's lock.
type Facts struct {
	ID     [32]byte
	Self   peer.ID
	Chain  []peer.ID
	Pos    int // this server's position in Chain
	N      int // slots
	Params wire.Params
}

// M is the chain's length.
func (ep Facts) M() int { return len(ep.Chain) }

// Last reports whether this server is the chain's last.
func (ep Facts) Last() bool { return ep.Pos == ep.M()-1 }

// BK is the epoch's chunk size and request slots a payload.
func (ep Facts) BK() (int, int) { return int(ep.Params.ChunkSize), int(ep.Params.K) }

// Others is the chain without this server.
func (ep Facts) Others() []peer.ID {
	out := make([]peer.ID, 0, ep.M()-1)
	for _, p := range ep.Chain {
		if p != ep.Self {
			out = append(out, p)
		}
	}
	return out
}

// BatchIn is which batch of a round a batch from server S is: 0 the
// input to mix, 1 the published payloads.
func (ep Facts) BatchIn(S int) int {
	if S == ep.M() {
		return 1
	}
	return 0
}

// Fx is what a step asks of its driver beyond the state it changed.
type Fx struct {
	Refuse error // the message is refused (a handler's error)
	// End: the epoch ends here for this reason and the chain is told;
	// Evidence, if set, is kept first as the round's (§8).
	End      string
	Evidence [][]byte
	// BadFrom is the S of the server named for a malformed signed
	// batch, whose body is the evidence; 0 if none.
	BadFrom int
	// Accuse is 1 + the input position whose MAC failed: blame starts
	// there; 0 if none.
	Accuse int
}

// Next is what a server does with a batch once a step has seen it.
type Next uint8

const (
	Ack     Next = iota // acknowledged, nothing more (void, or a copy)
	Refused             // Fx.Refuse
	Repeat              // a repeat: its root recorded, the batch dropped
	Decode              // new: decode its body
	Fault               // acknowledged; Fx says what follows
	Mix                 // mix it (S < m)
	Publish             // publish it (S = m)
)

// CheckBatchHead checks a batch's head before anything of it is kept:
// sent by the server before this one (or by the last, to publish), signed
// by it, for a round of the epoch (§5.2). Pure: no round state.
func CheckBatchHead(ep Facts, from peer.ID, h wire.BatchHead) error {
	m, S := ep.M(), int(h.S)
	if S < 1 || S > m || ep.Chain[S-1] != from || (S < m && S != ep.Pos) {
		return fmt.Errorf("node: batch for server %d not expected from %s", S, from.ShortString())
	}
	if err := proto.VerifyPeerSig(from, BatchDigest(&wire.Batch{Epoch: h.Epoch, Round: h.Round, S: h.S, Root: h.Root}), h.Sig); err != nil {
		return err
	}
	// A round outside the epoch or the kept window is refused before its
	// root is recorded: nothing of it may stay here.
	if h.Round >= ep.Params.Rounds {
		return fmt.Errorf("node: batch for round %d beyond the epoch's %d", h.Round, ep.Params.Rounds)
	}
	return nil
}

// BatchDigest is what a batch's sender signs: its epoch, round, S and
// root.
func BatchDigest(b *wire.Batch) [32]byte {
	var e wire.Enc
	e.U32(b.Round)
	e.U16(b.S)
	return proto.TaggedHash(proto.TagBatch, b.Epoch[:], e.B, b.Root[:])
}

// SignBatch sets the batch's root (PublishedRoot if ph, the hashes of a
// published batch, is given) and signs it.
func SignBatch(priv crypto.PrivKey, b *wire.Batch, ph *Hashes) error {
	if ph != nil {
		b.Root = PublishedRoot(b.Entries, ph)
	} else {
		b.Root = proto.MerkleRoot(b.Entries)
	}
	sig, err := proto.Sign(priv, BatchDigest(b))
	b.Sig = sig
	return err
}

// BatchRoot is the Merkle root of a decoded batch, with the payloads'
// hashes for the publication (S = m).
func BatchRoot(ep Facts, b *wire.Batch) ([32]byte, *Hashes) {
	if int(b.S) == ep.M() {
		bb, k := ep.BK()
		ph := HashPublished(b.Entries, bb, k)
		return PublishedRoot(b.Entries, ph), ph
	}
	return proto.MerkleRoot(b.Entries), nil
}

// LayerFault is what a failure to open this server's layer of round r
// leads to (§5.2 v2: any fault voids the round; the input batch stays as
// the evidence): a MAC failure's blame walks its first failing position
// (§8), any other fault ends the epoch.
func LayerFault(ep Facts, r uint32, in [][]byte, err error) Fx {
	fx := Fx{Evidence: in}
	var me *mix.MACError
	if errors.As(err, &me) && len(me.Positions) > 0 {
		fx.Accuse = 1 + me.Positions[0]
		return fx
	}
	fx.End = fmt.Sprintf("round %d void: layer %d: %v", r, ep.Pos, err)
	return fx
}

// Sealed is a mixed round's batch, signed, and where it goes: to the next
// server, or (the last server) to every other one while this one
// publishes it.
type Sealed struct {
	Batch   wire.Batch
	To      []peer.ID
	Publish bool
	PH      *Hashes // the payloads' hashes, when Publish
}

// SealBatch signs this server's output of round r (permuted, §5.2) with
// the input's client signatures and onion hashes, and addresses it. A
// published batch's leaves commit to the payloads' digests (§5.1) and its
// payloads go out without their zero padding (wire.ZeroRun; the bytes
// signed are the same).
func SealBatch(ep Facts, priv crypto.PrivKey, r uint32, out [][]byte, clientSigs [][64]byte, clientHashes [][32]byte) (Sealed, error) {
	sd := Sealed{Batch: wire.Batch{Epoch: ep.ID, Round: r, S: uint16(ep.Pos + 1), Entries: out, ClientSigs: clientSigs, ClientHashes: clientHashes}}
	if !ep.Last() {
		sd.To = []peer.ID{ep.Chain[ep.Pos+1]}
		return sd, SignBatch(priv, &sd.Batch, nil)
	}
	bb, k := ep.BK()
	sd.PH = HashPublished(out, bb, k)
	if err := SignBatch(priv, &sd.Batch, sd.PH); err != nil {
		return sd, err
	}
	sd.Batch.Zeros = make([]wire.ZeroRun, len(out))
	for i, raw := range out {
		at, n := mix.PaddingRun(raw, bb, k)
		sd.Batch.Zeros[i] = wire.ZeroRun{At: uint32(at), N: uint32(n)}
	}
	sd.To, sd.Publish = ep.Others(), true
	return sd, nil
}

// CheckClientSigs checks that every input slot of the batch's round but
// the dead ones holds an onion its client signed (§5.1, §5.2): the
// signature of slot i by the registration key of clients[i] over the
// onion's hash, as S_0 received it.
func CheckClientSigs(clients []wire.ClientEntry, b *wire.Batch, dead []int) error {
	if len(b.ClientSigs) != len(clients) || len(b.ClientHashes) != len(clients) {
		return fmt.Errorf("%d client signatures and %d onion hashes for %d slots", len(b.ClientSigs), len(b.ClientHashes), len(clients))
	}
	for i := range clients {
		if slices.Contains(dead, i) {
			continue
		}
		if err := mix.VerifySubmissionDigest(ed25519.PublicKey(clients[i].RegKey[:]), mix.EpochID(b.Epoch), uint64(b.Round), uint32(i), b.ClientHashes[i], b.ClientSigs[i][:]); err != nil {
			return fmt.Errorf("slot %d: %w", i, err)
		}
	}
	return nil
}
