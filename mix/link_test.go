package mix

import (
	"crypto/ed25519"
	"fmt"
	"testing"

	"github.com/riffle-net/riffle/internal/group"
)

// linkAttack is what the holders of every secret but the honest server h's
// can do against h's setup step. xs[k] is server k's key (xs[h] is nil
// unless the test hands the attacker the honest key too). It returns, for
// each input position p of S_h, the output it links p to, or -1, trying
// three distinguishers in turn:
//
//  1. Decryption. It predicts the plaintexts of every component that S_h
//     shuffles at input p, and decrypts those components at every output of
//     S_h's step 3 with the later servers' keys to find a match. Without x_h
//     its prediction uses what S_h published, U_{p,h}: D_p = B_{p,h} −
//     U_{p,h} = x_h·A_{p,h}, which removes x_h from component j exactly when
//     A_{p,j} = A_{p,h} (one r for all components: version 1's flaw).
//  2. Equal elements. Any group element of input p's shuffled components that
//     reappears among output q's published elements (no re-randomisation).
//  3. Equal differences. A_{p,j} − A_{p,0} reappearing as A'_{q,j} − A'_{q,0}
//     for some j ≥ 1 (one re-randomisation scalar shared by a vector's
//     components cancels in the difference).
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
			b = append(b, e.Bytes()...)
		}
		return string(b)
	}
	diff := func(v []group.Ciphertext, j int) string {
		return key([]*group.Element{group.NewElement().Subtract(v[j].A, v[0].A)})
	}
	outs := make(map[string]int)  // decrypted output vector → q
	elems := make(map[string]int) // one published output element → q
	diffs := make(map[string]int) // A'_j − A'_0 → q
	// What S_h hands on at output q: (A', stripped) per component; at the
	// last server the stripped pseudonym is the published P_q.
	for q := range res.Shuffled {
		v := make([]group.Ciphertext, len(res.Shuffled[q]))
		for c, ct := range res.Shuffled[q] {
			v[c] = group.Ciphertext{A: ct.A, B: res.Stripped[q][c]}
		}
		pt := make([]*group.Element, len(v))
		for c, ct := range v {
			pt[c] = decrypt(ct, keyFrom(h+1+c))
			elems[key([]*group.Element{ct.A})] = q
			elems[key([]*group.Element{ct.B})] = q
			elems[key([]*group.Element{res.Shuffled[q][c].B})] = q
			if c > 0 {
				diffs[diff(v, c)] = q
			}
		}
		outs[key(pt)] = q
	}
	link := make([]int, len(inputs))
	for p, v := range inputs {
		link[p] = -1
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
		if q, ok := outs[key(pt)]; ok {
			link[p] = q
			continue
		}
		for c, ct := range v[1:] {
			for _, e := range []*group.Element{ct.A, ct.B} {
				if q, ok := elems[key([]*group.Element{e})]; ok {
					link[p] = q
				}
			}
			if c > 0 {
				if q, ok := diffs[diff(v[1:], c)]; ok {
					link[p] = q
				}
			}
		}
	}
	return link
}

// brokenStep is server h's step 2 and 3 done wrong on purpose, for the
// attack's negative controls: the honest permutation, but no
// re-randomisation (shared false) or one scalar per vector shared by all its
// components (shared true). U stays the honest one; proofs are left out (the
// attack does not look at them).
func brokenStep(t *testing.T, X []*group.Element, h int, x *group.Scalar, inputs [][]group.Ciphertext, honest *StepResult, forward []int, shared bool, rand *detRand) *StepResult {
	t.Helper()
	keys := mustKeys(X, h)[1:]
	n, w := len(inputs), len(X)-h
	res := &StepResult{S: h, M: len(X), U: honest.U, Shuffled: make([][]group.Ciphertext, n), Stripped: make([][]*group.Element, n)}
	for p, v := range inputs {
		q := forward[p]
		r := group.NewScalar()
		if shared {
			var err error
			if r, err = group.RandomScalar(rand); err != nil {
				t.Fatal(err)
			}
		}
		res.Shuffled[q] = make([]group.Ciphertext, w)
		res.Stripped[q] = make([]*group.Element, w)
		for j, ct := range v[1:] {
			a := group.NewElement().Add(ct.A, group.NewElement().ScalarBaseMult(r))
			b := group.NewElement().Add(ct.B, group.NewElement().ScalarMult(r, keys[j]))
			res.Shuffled[q][j] = group.Ciphertext{A: a, B: b}
			res.Stripped[q][j] = group.NewElement().Subtract(b, group.NewElement().ScalarMult(x, a))
		}
	}
	return res
}

// TestHonestServerUnlinkable shows §4.2 (v2)'s claim: with fresh
// randomness per component and "open, shuffle, then strip", the holders of
// every other secret cannot match the honest server's outputs to its inputs
// (no position linked, where guessing would get one in n right), including
// the last server, whose shuffle of the pseudonyms alone hides which input
// became which published P_q. Negative
// controls show that each distinguisher of linkAttack has teeth: the same
// attack links every position given the honest server's key (what
// version 1's "strip first" published), when clients share one r across
// components (version 1's registration flaw), when the honest server does
// not re-randomise, and when it re-randomises a vector's components with one
// shared scalar.
func TestHonestServerUnlinkable(t *testing.T) {
	const m, n = 3, 40
	type flaw int
	const (
		none flaw = iota
		honestKey
		sharedR
		noRerandomisation
		sharedRerandomisation
	)
	run := func(t *testing.T, h int, fl flaw) (correct, linked int) {
		rand := newDetRand(fmt.Sprintf("link %d", h)).(*detRand)
		epoch := testEpoch("link")
		sks, X := testServers(t, m, rand)
		regs := make([]*Registration, n)
		for i := range n {
			pub := testRegKey(t, rand).Public().(ed25519.PublicKey)
			var cs *ClientSecret
			var reg *Registration
			if fl == sharedR {
				cs, reg = registerSharedR(t, epoch, pub, X, rand)
			} else {
				var err error
				if cs, reg, err = Register(epoch, pub, X, rand); err != nil {
					t.Fatal(err)
				}
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
			fw := sec.Forward()
			switch fl {
			case noRerandomisation, sharedRerandomisation:
				res = brokenStep(t, X, h, sks[h].x, in, res, fw, fl == sharedRerandomisation, rand)
			}
			xs := make([]*group.Scalar, m)
			for k := range m {
				if k != h || fl == honestKey {
					xs[k] = sks[k].x
				}
			}
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
	for h := range m {
		t.Run(fmt.Sprintf("honest S_%d without its key", h), func(t *testing.T) {
			if correct, linked := run(t, h, none); linked != 0 {
				t.Fatalf("linked %d positions (%d correctly) without the honest server's secrets", linked, correct)
			}
		})
		for _, c := range []struct {
			name string
			fl   flaw
		}{
			{"with its key", honestKey},
			{"without re-randomisation", noRerandomisation},
			{"re-randomising with one scalar per vector", sharedRerandomisation},
		} {
			if c.fl == sharedRerandomisation && h == m-1 {
				continue // width 1: one scalar per vector is one per component
			}
			t.Run(fmt.Sprintf("honest S_%d %s", h, c.name), func(t *testing.T) {
				if correct, _ := run(t, h, c.fl); correct != n {
					t.Fatalf("the attack linked only %d of %d positions: it has no teeth", correct, n)
				}
			})
		}
	}
	t.Run("honest S_0, v1 shared randomness", func(t *testing.T) {
		if correct, _ := run(t, 0, sharedR); correct != n {
			t.Fatalf("the attack linked only %d of %d positions of version 1 registrations", correct, n)
		}
	})
}
