package mix

import (
	"crypto/ed25519"
	"encoding/binary"
	"fmt"
	"io"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

func TestSimulate(t *testing.T) {
	for _, m := range []int{1, 2, 3, 5} {
		for _, n := range []int{1, 2, 3, 100} {
			t.Run(fmt.Sprintf("m=%d/n=%d", m, n), func(t *testing.T) {
				res, err := Simulate(m, n, 2, 64, 2, newDetRand(fmt.Sprintf("sim %d %d", m, n)))
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Position) != n || len(res.Payloads) != 2 {
					t.Fatalf("result shape: %d positions, %d rounds", len(res.Position), len(res.Payloads))
				}
			})
		}
	}
}

// SimResult is what Simulate observed.
type SimResult struct {
	// Position[i] is client i's final output position q_i.
	Position []int
	// Pseudonyms is the published pseudonym list, by output position.
	Pseudonyms []*group.Element
	// Payloads[r][q] is the plaintext payload published at output q in
	// round r.
	Payloads [][][]byte
}

// Simulate runs a whole epoch in one process, for tests and benchmarks: m
// servers and n clients, registration (every proof checked), setup (every
// step encoded, decoded and verified from public data), then R rounds in
// which every client uploads a chunk naming itself and the round. It checks
// that every client's payload comes out exactly once, at the position its
// pseudonym was published, with a pseudonym signature that verifies. Any
// discrepancy is an error. All secrets are closed at the end.
func Simulate(m, n, R, b, k int, rand io.Reader) (*SimResult, error) {
	if m < 1 || m > MaxServers || n < 1 || R < 1 || R > MaxRounds {
		return nil, fmt.Errorf("simulate: m = %d, n = %d, R = %d out of range", m, n, R)
	}
	if err := checkParams(b, k); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	if b < 16 {
		return nil, fmt.Errorf("simulate: chunk size %d, want ≥ 16 to name client and round", b)
	}
	var epoch EpochID
	if _, err := io.ReadFull(rand, epoch[:]); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}

	// Servers (§3).
	sks := make([]*ServerSecret, m)
	rks := make([]*RoundKeys, m)
	X := make([]*group.Element, m)
	Y := make([][]*group.Element, m)
	Yp := make([][]*group.Element, m)
	defer func() {
		for s := range m {
			sks[s].Close()
			rks[s].Close()
		}
	}()
	for s := range m {
		var err error
		if sks[s], err = NewServerSecret(rand); err != nil {
			return nil, fmt.Errorf("simulate: %w", err)
		}
		if rks[s], err = NewRoundKeys(R, rand); err != nil {
			return nil, fmt.Errorf("simulate: %w", err)
		}
		X[s] = sks[s].Public()
		Y[s], Yp[s] = rks[s].Public()
		ctx := KeyContext(0, epoch, []byte{byte(s)})
		proof, err := sks[s].ProveKey(ctx, rand)
		if err != nil {
			return nil, fmt.Errorf("simulate: %w", err)
		}
		if err := VerifyKey(X[s], ctx, proof); err != nil {
			return nil, fmt.Errorf("simulate: server %d: %w", s, err)
		}
	}

	// Registration (§4.1).
	clients := make([]*ClientSecret, n)
	regKeys := make([]ed25519.PrivateKey, n)
	regs := make([]*Registration, n)
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for i := range n {
		var seed [ed25519.SeedSize]byte
		if _, err := io.ReadFull(rand, seed[:]); err != nil {
			return nil, fmt.Errorf("simulate: %w", err)
		}
		regKeys[i] = ed25519.NewKeyFromSeed(seed[:])
		pub := regKeys[i].Public().(ed25519.PublicKey)
		cs, reg, err := Register(epoch, pub, X, rand)
		if err != nil {
			return nil, fmt.Errorf("simulate: client %d: %w", i, err)
		}
		clients[i] = cs
		enc, err := reg.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("simulate: client %d: %w", i, err)
		}
		if regs[i], err = ParseRegistration(enc, m); err != nil {
			return nil, fmt.Errorf("simulate: client %d: %w", i, err)
		}
		if err := VerifyRegistration(epoch, pub, X, regs[i]); err != nil {
			return nil, fmt.Errorf("simulate: client %d: %w", i, err)
		}
	}
	if err := CheckDistinct(regs); err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}

	// Setup (§4.2).
	U := make([][]*group.Element, m)
	forward := make([][]int, m)
	inputs := InitialVectors(regs)
	var last *StepResult
	for s := range m {
		res, sec, err := SetupStep(epoch, s, X, sks[s], inputs, rand)
		if err != nil {
			return nil, fmt.Errorf("simulate: %w", err)
		}
		forward[s] = sec.Forward()
		sec.Close()
		sks[s].Close() // §3: x_s is erased once setup is done
		enc, err := res.MarshalBinary()
		if err != nil {
			return nil, fmt.Errorf("simulate: %w", err)
		}
		pub, err := ParseStepResult(enc, n, m, s)
		if err != nil {
			return nil, fmt.Errorf("simulate: %w", err)
		}
		if err := VerifyStep(epoch, s, X, inputs, pub, rand); err != nil {
			return nil, fmt.Errorf("simulate: %w", err)
		}
		U[s] = pub.U
		inputs, last = pub.Next(), pub
	}
	out := &SimResult{Position: make([]int, n), Pseudonyms: last.Pseudonyms(), Payloads: make([][][]byte, R)}
	for i := range n {
		q := i
		for s := range m {
			q = forward[s][q]
		}
		out.Position[i] = q
		if out.Pseudonyms[q].Equal(clients[i].P) != 1 {
			return nil, fmt.Errorf("simulate: client %d's pseudonym is not at its output position %d", i, q)
		}
	}

	// Rounds (§5).
	for r := range uint64(R) {
		onions := make([][]byte, n)
		for i := range n {
			chunk := make([]byte, 16)
			binary.BigEndian.PutUint64(chunk, uint64(i))
			binary.BigEndian.PutUint64(chunk[8:], r)
			p := &Payload{Kind: KindChunk, Length: uint32(len(chunk)), Chunk: chunk}
			raw, err := EncodePayload(p, b, k, epoch, r, clients[i], rand)
			if err != nil {
				return nil, fmt.Errorf("simulate: client %d round %d: %w", i, r, err)
			}
			lk, err := clients[i].LayerKeys(epoch, r, Y, Yp)
			if err != nil {
				return nil, fmt.Errorf("simulate: client %d round %d: %w", i, r, err)
			}
			onions[i], err = Seal(epoch, r, lk, raw)
			CloseLayerKeys(lk)
			if err != nil {
				return nil, fmt.Errorf("simulate: client %d round %d: %w", i, r, err)
			}
			sig := SignSubmission(regKeys[i], epoch, r, uint32(i), onions[i])
			if err := VerifySubmission(regKeys[i].Public().(ed25519.PublicKey), epoch, r, uint32(i), onions[i], sig); err != nil {
				return nil, fmt.Errorf("simulate: %w", err)
			}
		}
		for s := range m {
			keys, err := ServerLayerKeys(epoch, s, r, rks[s], U[s])
			if err != nil {
				return nil, fmt.Errorf("simulate: %w", err)
			}
			opened, err := OpenLayer(epoch, r, s, keys, onions)
			CloseLayerKeys(keys)
			if err != nil {
				return nil, fmt.Errorf("simulate: %w", err)
			}
			onions = Permute(forward[s], opened)
		}
		if bad := VerifyPayloads(epoch, r, out.Pseudonyms, onions, b, k, rand); len(bad) != 0 {
			return nil, fmt.Errorf("simulate: round %d: pseudonym signatures fail at outputs %v", r, bad)
		}
		seen := make([]int, n)
		for q, raw := range onions {
			p, err := DecodePayload(raw, b, k)
			if err != nil {
				return nil, fmt.Errorf("simulate: round %d output %d: %w", r, q, err)
			}
			if len(p.Chunk) != 16 || binary.BigEndian.Uint64(p.Chunk[8:]) != r {
				return nil, fmt.Errorf("simulate: round %d output %d: foreign payload", r, q)
			}
			i := binary.BigEndian.Uint64(p.Chunk)
			if i >= uint64(n) || out.Position[i] != q {
				return nil, fmt.Errorf("simulate: round %d: payload of client %d at output %d", r, i, q)
			}
			seen[i]++
		}
		for i, c := range seen {
			if c != 1 {
				return nil, fmt.Errorf("simulate: round %d: client %d's payload came out %d times", r, i, c)
			}
		}
		out.Payloads[r] = onions
	}
	return out, nil
}
