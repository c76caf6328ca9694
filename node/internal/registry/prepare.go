package registry

import (
	"crypto/ecdh"
	"fmt"
	"io"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Secrets are the keys one answer to a Prepare draws: never on disk, and
// erased at the epoch's end (§3 forward secrecy).
type Secrets struct {
	SK   *mix.ServerSecret
	RK   *mix.RoundKeys
	DKey *ecdh.PrivateKey
}

// Close erases the secrets drawn.
func (k Secrets) Close() {
	if k.SK != nil {
		k.SK.Close()
	}
	if k.RK != nil {
		k.RK.Close()
	}
}

// Draw draws this server's answer to a Prepare of number with nonce over
// rounds rounds (§3, §4.1): fresh keys, and the entry it offers with
// their public parts, its peer id pid, nick and addresses (the first
// wire.MaxAddrs), the proof of knowledge of its server key bound to the
// number, the nonce and pid, and the commitment to r_j, drawn fresh for
// every attempt and never reused (§3 v3). Nothing stays drawn on an error.
func Draw(rnd io.Reader, number uint64, nonce [32]byte, rounds int, pid, nick []byte, addrs [][]byte) (Secrets, wire.GroupEntry, [wire.CommitSize]byte, error) {
	var k Secrets
	var g wire.GroupEntry
	var r [wire.CommitSize]byte
	fail := func(err error) (Secrets, wire.GroupEntry, [wire.CommitSize]byte, error) {
		k.Close()
		return Secrets{}, wire.GroupEntry{}, r, err
	}
	var err error
	if k.SK, err = mix.NewServerSecret(rnd); err != nil {
		return fail(err)
	}
	if k.RK, err = mix.NewRoundKeys(rounds, rnd); err != nil {
		return fail(err)
	}
	if k.DKey, err = ecdh.X25519().GenerateKey(rnd); err != nil {
		return fail(fmt.Errorf("node: x25519 key: %w", err))
	}
	pok, err := k.SK.ProveKey(mix.KeyContext(number, nonce, pid), rnd)
	if err != nil {
		return fail(err)
	}
	if _, err := io.ReadFull(rnd, r[:]); err != nil {
		return fail(fmt.Errorf("node: selection value: %w", err))
	}
	g = wire.GroupEntry{PeerID: pid, Nick: nick, PoK: pok, Commit: proto.Commitment(r)}
	g.Addrs = addrs[:min(len(addrs), wire.MaxAddrs)]
	copy(g.X[:], k.SK.Public().Bytes())
	copy(g.D[:], k.DKey.PublicKey().Bytes())
	Y, Yp := k.RK.Public()
	for i := range Y {
		var y, yp [32]byte
		copy(y[:], Y[i].Bytes())
		copy(yp[:], Yp[i].Bytes())
		g.Y, g.Yp = append(g.Y, y), append(g.Yp, yp)
	}
	return k, g, r, nil
}
