package mix

import (
	"crypto/ed25519"
	"fmt"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

// linkAttack is what the holders of every secret but the honest server h's
// can do against h's setup step. xs[k] is server k's key (xs[h] is nil
// unless the test hands the attacker the honest key too). It predicts, for
// each input position p of S_h, the plaintexts of every component that S_h
// shuffles, and decrypts those components at every output position of S_h's
// step 3 with the later servers' keys to find a match. Without x_h its
// prediction uses what S_h published, U_{p,h}: D_p = B_{p,h} − U_{p,h} =
// x_h·A_{p,h}, which removes x_h from component j exactly when A_{p,j} =
// A_{p,h} (one r for all components: version 1's flaw). It returns, for each
// input p, the output it links p to, or -1.
func linkAttack(xs []*group.Scalar, h int, inputs [][]group.Ciphertext, res *StepResult) []int {
	m := len(xs)
	// keyFrom(j) is Σ x_k for k = h+1..min(j, m-1): the part of component
	// j's key (full index j) that the attacker holds, past S_h.
	keyFrom := func(j int) *group.Scalar {
		k := group.NewScalar()
		for i := h + 1; i <= min(j, m-1); i++ {
			k.Add(k, xs[i])
		}
		return k
	}
	decrypt := func(ct group.Ciphertext, k *group.Scalar) *group.Element {
		return group.NewElement().Subtract(ct.B, group.NewElement().ScalarMult(k, ct.A))
	}
	key := func(v []*group.Element) string {
		var b []byte
		for _, e := range v {
			b = e.Encode(b)
		}
		return string(b)
	}
	outs := make(map[string]int)
	for q, v := range res.Next() {
		pt := make([]*group.Element, len(v))
		for c, ct := range v {
			pt[c] = decrypt(ct, keyFrom(h+1+c))
		}
		outs[key(pt)] = q
	}
	link := make([]int, len(inputs))
	for p, v := range inputs {
		D := group.NewElement().Subtract(v[0].B, res.U[p])
		pt := make([]*group.Element, len(v)-1)
		for c, ct := range v[1:] {
			m := decrypt(ct, keyFrom(h+1+c))
			if xs[h] != nil {
				m.Subtract(m, group.NewElement().ScalarMult(xs[h], ct.A))
			} else {
				m.Subtract(m, D)
			}
			pt[c] = m
		}
		q, ok := outs[key(pt)]
		if !ok {
			q = -1
		}
		link[p] = q
	}
	return link
}

// TestHonestServerUnlinkable shows SPEC §4.2 (v2)'s claim: with fresh
// randomness per component and "open, shuffle, then strip", the holders of
// every other secret cannot match the honest server's outputs to its inputs
// (no position linked, where guessing would get one in n right); the same
// attack links every position given the honest server's key, and links
// every position at S_0 when clients share one r across components
// (version 1's flaw), so the test can fail.
func TestHonestServerUnlinkable(t *testing.T) {
	const m, n = 3, 40
	run := func(t *testing.T, h int, sharedR, knowHonest bool) (correct, linked int) {
		rand := newDetRand(fmt.Sprintf("link %d", h))
		epoch := testEpoch("link")
		sks, X := testServers(t, m, rand)
		regs := make([]*Registration, n)
		for i := range n {
			pub := testRegKey(t, rand).Public().(ed25519.PublicKey)
			cs, reg, err := register(epoch, pub, X, rand, sharedR)
			if err != nil {
				t.Fatal(err)
			}
			cs.Close()
			regs[i] = reg
		}
		in := InitialVectors(regs)
		for s := 0; ; s++ {
			res, sec, err := SetupStep(epoch, s, X, sks[s], in, rand)
			if err != nil {
				t.Fatal(err)
			}
			defer sec.Close()
			if s < h {
				in = res.Next()
				continue
			}
			if err := VerifyStep(epoch, s, X, in, res, rand); err != nil {
				t.Fatal(err)
			}
			xs := make([]*group.Scalar, m)
			for k := range m {
				if k != h || knowHonest {
					xs[k] = sks[k].x
				}
			}
			fw := sec.Forward()
			for p, q := range linkAttack(xs, h, in, res) {
				if q >= 0 {
					linked++
					if q == fw[p] {
						correct++
					}
				}
			}
			return correct, linked
		}
	}
	for _, h := range []int{0, 1} {
		t.Run(fmt.Sprintf("honest S_%d without its key", h), func(t *testing.T) {
			if correct, linked := run(t, h, false, false); linked != 0 {
				t.Fatalf("linked %d positions (%d correctly) without the honest server's secrets", linked, correct)
			}
		})
		t.Run(fmt.Sprintf("honest S_%d with its key", h), func(t *testing.T) {
			if correct, _ := run(t, h, false, true); correct != n {
				t.Fatalf("the attack linked only %d of %d positions with the honest key: it has no teeth", correct, n)
			}
		})
	}
	t.Run("honest S_0, v1 shared randomness", func(t *testing.T) {
		if correct, _ := run(t, 0, true, false); correct != n {
			t.Fatalf("the attack linked only %d of %d positions of version 1 registrations", correct, n)
		}
	})
}
