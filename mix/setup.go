package mix

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/mix/shuffle"
)

// ShareError reports an opened share U (at an input position) or a
// pseudonym P (at an output position of the last server) that is the
// identity or repeats an earlier one. §4.2 step 3: setup aborts, and the
// client at fault is found by walking the position back with the servers'
// step-1 blame proofs (ProveRoute). VerifyStep returns it only after the
// step's proofs have verified, so the server that published the value is not
// at fault.
type ShareError struct {
	Server    int
	Pseudonym bool // false: U at input position Position; true: P at output position Position
	Position  int
	Duplicate int // the earlier position holding the same value, or -1 for the identity
}

func (e *ShareError) Error() string {
	what, where := "opened share U", "input"
	if e.Pseudonym {
		what, where = "pseudonym P", "output"
	}
	if e.Duplicate < 0 {
		return fmt.Sprintf("setup at server %d: %s at %s position %d is the identity", e.Server, what, where, e.Position)
	}
	return fmt.Sprintf("setup at server %d: %s at %s position %d repeats position %d", e.Server, what, where, e.Position, e.Duplicate)
}

// StepResult is what server s publishes after its setup step (§4.2 step
// 4), for n vectors and w = m − s remaining components (s+1..m-1 and then
// the pseudonym m):
//
//   - U[p]: the opened share of component s at input position p (step 1);
//   - Shuffled[q][j]: the re-randomised and permuted components at output
//     position q (step 2), with the shuffle proof;
//   - Stripped[q][j]: B − x_s·A of Shuffled[q][j] (step 3); the next
//     server's ciphertext is (Shuffled[q][j].A, Stripped[q][j]);
//   - DLEQ: one batched Chaum–Pedersen proof (§4.4) over the openings
//     and the strippings, which share x_s.
type StepResult struct {
	S, M         int
	U            []*group.Element
	Shuffled     [][]group.Ciphertext
	Stripped     [][]*group.Element
	ShuffleProof *shuffle.Proof
	DLEQ         []byte

	// wire caches the encoding of a result made by SetupStep (which must
	// not be modified afterwards).
	wire []byte
	// elemEnc is the encoding of U, Shuffled and Stripped in wire order,
	// as SetupStep encoded them or ParseStepResult decoded them; it is used
	// only while those fields hold the very objects it was made from
	// (encoded.go).
	elemEnc *encoded
}

// A result from ParseStepResult is checked against the bytes it was parsed
// from (the elements are decoded from them, so the two agree): change one
// for a test by replacing elements, which VerifyStep notices, and not by
// modifying an element in place.

// StepSecret is what server s keeps from its setup step until the epoch's
// end (§4.2 step 2, §8): π_s and the re-randomisation scalars. Never on
// disk; Close erases them.
type StepSecret struct {
	s       int
	forward []int
	wit     *shuffle.Witness
}

// Forward returns a copy of π_s: input position p → output position π_s(p).
// OpenLayer's outputs go through Permute(Forward(), ·).
func (ss *StepSecret) Forward() []int { return append([]int(nil), ss.forward...) }

// Close erases π_s and the re-randomisation scalars.
func (ss *StepSecret) Close() {
	if ss == nil {
		return
	}
	clear(ss.forward)
	ss.forward = nil
	ss.wit.Close()
}

// shuffleContext is the shuffle statement's context: epoch id || u32 s ||
// "shuffle", so that no proof is valid for another server or epoch.
func shuffleContext(epoch EpochID, s int) []byte {
	ctx := make([]byte, 0, 32+4+len(shuffleStepName))
	ctx = append(ctx, epoch[:]...)
	ctx = binary.BigEndian.AppendUint32(ctx, uint32(s))
	return append(ctx, shuffleStepName...)
}

// checkVectors validates the shape of server s's input: n ≥ 1 vectors of
// m − s + 1 non-nil components.
func checkVectors(inputs [][]group.Ciphertext, m, s int) error {
	n := len(inputs)
	if n < 1 || n > MaxClients {
		return fmt.Errorf("%d input vectors, want 1..%d", n, MaxClients)
	}
	for p, v := range inputs {
		if len(v) != m-s+1 {
			return fmt.Errorf("input vector %d has %d components, want %d", p, len(v), m-s+1)
		}
		for j, ct := range v {
			if ct.A == nil || ct.B == nil {
				return fmt.Errorf("input vector %d component %d is nil", p, j)
			}
		}
	}
	return nil
}

// SetupStep runs server s's setup step (§4.2, version 2): (1) open
// component s at every input position, (2) shuffle and re-randomise the
// remaining components with a proof, (3) strip x_s from them, and prove (1)
// and (3) with one batched DLEQ. If an opened U or, at the last server, a
// pseudonym is the identity or repeated, it returns the complete, proven
// result together with a *ShareError: the result is still broadcast so that
// every server can check the claim and start the walk back.
func SetupStep(epoch EpochID, s int, serverKeys []*group.Element, sk *ServerSecret, inputs [][]group.Ciphertext, rand io.Reader) (*StepResult, *StepSecret, error) {
	m := len(serverKeys)
	keys, err := AggregateKeys(serverKeys, s)
	if err != nil {
		return nil, nil, fmt.Errorf("setup step %d: %w", s, err)
	}
	x, err := sk.secret()
	if err != nil {
		return nil, nil, fmt.Errorf("setup step %d: %w", s, err)
	}
	if sk.X.Equal(serverKeys[s]) != 1 {
		return nil, nil, fmt.Errorf("setup step %d: secret key does not match server key %d", s, s)
	}
	if err := checkVectors(inputs, m, s); err != nil {
		return nil, nil, fmt.Errorf("setup step %d: %w", s, err)
	}
	n, w := len(inputs), m-s
	inEnc := encodeVectors(inputs)

	// Step 1: open component s.
	res := &StepResult{S: s, M: m, U: make([]*group.Element, n)}
	parallel(n, func(p int) {
		t := group.NewElement().ScalarMult(x, inputs[p][0].A)
		res.U[p] = t.Subtract(inputs[p][0].B, t)
	})

	// Step 2: shuffle the rest, each component under its own key.
	rest := make([][]group.Ciphertext, n)
	for p, v := range inputs {
		rest[p] = v[1:]
	}
	shuffled, wit, err := shuffle.Shuffle(keys[1:], rest, rand)
	if err != nil {
		return nil, nil, fmt.Errorf("setup step %d: %w", s, err)
	}
	ss := &StepSecret{s: s, wit: wit}
	if ss.forward, err = wit.InputToOutput(); err != nil {
		ss.Close()
		return nil, nil, fmt.Errorf("setup step %d: %w", s, err)
	}
	// U and the outputs are encoded once, for the wire, σ and the DLEQ's
	// digest alike.
	res.Shuffled = shuffled
	elems := make([]byte, 0, group.ElementSize*n*(1+3*w))
	elems = append(elems, encodeAll(append(append([]*group.Element(nil), res.U...), flatVectors(shuffled)...))...)
	st := &shuffle.Statement{Context: shuffleContext(epoch, s), Keys: keys[1:], Inputs: rest, Outputs: shuffled,
		InputsEnc: vectorRows(inEnc, n, w+1, 1), OutputsEnc: vectorRows(elems[group.ElementSize*n:], n, w, 0)}
	if res.ShuffleProof, err = shuffle.Prove(st, wit, rand); err != nil {
		ss.Close()
		return nil, nil, fmt.Errorf("setup step %d: %w", s, err)
	}

	// Step 3: strip x_s.
	res.Stripped = make([][]*group.Element, n)
	parallel(n, func(q int) {
		row := make([]*group.Element, w)
		for j, ct := range shuffled[q] {
			t := group.NewElement().ScalarMult(x, ct.A)
			row[j] = t.Subtract(ct.B, t)
		}
		res.Stripped[q] = row
	})

	// Steps 1 and 3 proven together (§4.4).
	stripped := make([]*group.Element, 0, n*w)
	for _, v := range res.Stripped {
		stripped = append(stripped, v...)
	}
	elems = append(elems, encodeAll(stripped)...)
	res.elemEnc = &encoded{elems: res.flatElements(), enc: elems}
	d := setupDigest(epoch, s, serverKeys, n, inEnc, elems)
	as, _ := setupPairs(inputs, res, false)
	z := setupCoefficients(d[:], len(as))
	abar := group.VarTimeMSM(z, as) // public points and coefficients
	dbar := group.NewElement().ScalarMult(x, abar)
	if res.DLEQ, err = proveDLEQ(d[:], x, serverKeys[s], abar, dbar, rand); err != nil {
		ss.Close()
		return nil, nil, fmt.Errorf("setup step %d: %w", s, err)
	}
	proof, err := res.ShuffleProof.MarshalBinary()
	if err != nil {
		ss.Close()
		return nil, nil, fmt.Errorf("setup step %d: %w", s, err)
	}
	res.wire = append(append(elems, proof...), res.DLEQ...)
	return res, ss, res.checkShares()
}

// setupDigest hashes the full statement of a setup step's batched DLEQ:
// epoch id, s, m, n, every server key, every input ciphertext (inEnc, from
// encodeVectors), then elems, the encodings of U, the shuffled outputs and
// the stripped elements in wire order (StepResult.encodeElements).
func setupDigest(epoch EpochID, s int, serverKeys []*group.Element, n int, inEnc, elems []byte) [64]byte {
	t := group.NewTranscript(tagSetupDLEQ).Fixed(epoch[:]).
		U32(uint32(s)).U32(uint32(len(serverKeys))).U32(uint32(n))
	for _, X := range serverKeys {
		t.Element(X)
	}
	return t.Fixed(inEnc).Fixed(elems).Sum()
}

// encodeAll encodes elements in order, on all cores (an encoding costs about
// as much as an inversion, and setup encodes tens of thousands).
func encodeAll(list []*group.Element) []byte {
	const e, chunk = group.ElementSize, 256
	out := make([]byte, len(list)*e)
	parallel((len(list)+chunk-1)/chunk, func(c int) {
		for i := c * chunk; i < min((c+1)*chunk, len(list)); i++ {
			copy(out[i*e:(i+1)*e], list[i].Bytes())
		}
	})
	return out
}

// flatElements lists U, the shuffled outputs and the stripped elements, in
// wire order.
func (res *StepResult) flatElements() []*group.Element {
	n := len(res.U)
	w := 0
	if n > 0 {
		w = len(res.Shuffled[0])
	}
	flat := make([]*group.Element, 0, n*(1+3*w))
	flat = append(flat, res.U...)
	flat = append(flat, flatVectors(res.Shuffled)...)
	for _, v := range res.Stripped {
		flat = append(flat, v...)
	}
	return flat
}

// encodeElements encodes U, the shuffled outputs and the stripped elements,
// in wire order (the bytes kept from SetupStep or ParseStepResult if the
// fields still hold the objects they encode).
func (res *StepResult) encodeElements() []byte {
	return res.elemEnc.encodeList(res.flatElements())
}

// setupPairs lists the DLEQ's pairs in order: first the openings (A_{p,s},
// B_{p,s} − U_p) for p < n, then the strippings (A'_{q,j}, B'_{q,j} −
// stripped_{q,j}) for q < n, j < w. With diffs false only the first list is
// built.
func setupPairs(inputs [][]group.Ciphertext, res *StepResult, diffs bool) (as, ds []*group.Element) {
	n := len(inputs)
	w := 0
	if n > 0 {
		w = len(res.Shuffled[0])
	}
	as = make([]*group.Element, 0, n*(w+1))
	for p := range n {
		as = append(as, inputs[p][0].A)
	}
	for q := range n {
		for j := range w {
			as = append(as, res.Shuffled[q][j].A)
		}
	}
	if !diffs {
		return as, nil
	}
	ds = make([]*group.Element, n*(w+1))
	parallel(n, func(p int) {
		ds[p] = group.NewElement().Subtract(inputs[p][0].B, res.U[p])
		for j := range w {
			ds[n+p*w+j] = group.NewElement().Subtract(res.Shuffled[p][j].B, res.Stripped[p][j])
		}
	})
	return as, ds
}

// setupCoefficients derives z_i = H(transcript, i) (§4.4): the first 16
// bytes of SHA-512(tag || d || u32 i), read as a 128-bit little-endian
// integer. 128 bits bound the soundness error of the batch by 2^-128.
func setupCoefficients(d []byte, count int) []*group.Scalar {
	z := make([]*group.Scalar, count)
	parallel((count+255)/256, func(c int) {
		for i := c * 256; i < min((c+1)*256, count); i++ {
			h := group.NewTranscript(tagSetupCoeff).Fixed(d).U32(uint32(i)).Sum()
			var buf [32]byte
			copy(buf[:16], h[:16])
			s, err := group.NewScalar().SetCanonicalBytes(buf[:])
			if err != nil {
				panic(err) // unreachable: 2^128 < ℓ
			}
			z[i] = s
		}
	})
	return z
}

// VerifyStep checks server s's published step from public data alone (docs/protocol.md
// §4.2 step 4): the shapes, the shuffle proof of step 2 and the batched DLEQ
// of steps 1 and 3. A proof failure wraps ErrProof (or the shuffle
// package's errors) and blames server s. If the proofs hold but an opened U
// or a pseudonym is the identity or repeated, it returns a *ShareError,
// which blames a client (§4.2 step 3).
func VerifyStep(epoch EpochID, s int, serverKeys []*group.Element, inputs [][]group.Ciphertext, res *StepResult, rand io.Reader) error {
	m := len(serverKeys)
	keys, err := AggregateKeys(serverKeys, s)
	if err != nil {
		return fmt.Errorf("verify step %d: %w", s, err)
	}
	if err := checkVectors(inputs, m, s); err != nil {
		return fmt.Errorf("verify step %d: %w", s, err)
	}
	if err := res.checkShape(len(inputs), m, s); err != nil {
		return fmt.Errorf("verify step %d: %w", s, err)
	}
	rest := make([][]group.Ciphertext, len(inputs))
	for p, v := range inputs {
		rest[p] = v[1:]
	}
	// The bytes hashed are those the elements were decoded from (or are
	// encoded now): canonical encodings are unique, so this is the same
	// digest as encoding every element checked (encoded.go).
	n, w := len(inputs), m-s
	inEnc, elems := encodeVectors(inputs), res.encodeElements()
	st := &shuffle.Statement{Context: shuffleContext(epoch, s), Keys: keys[1:], Inputs: rest, Outputs: res.Shuffled,
		InputsEnc:  vectorRows(inEnc, n, w+1, 1),
		OutputsEnc: vectorRows(elems[group.ElementSize*n:group.ElementSize*n+group.CiphertextSize*n*w], n, w, 0)}
	if err := shuffle.Verify(st, res.ShuffleProof, rand); err != nil {
		return fmt.Errorf("verify step %d: %w", s, err)
	}
	d := setupDigest(epoch, s, serverKeys, n, inEnc, elems)
	as, ds := setupPairs(inputs, res, true)
	z := setupCoefficients(d[:], len(as))
	var abar, dbar *group.Element
	done := make(chan struct{})
	go func() { abar = group.VarTimeMSM(z, as); close(done) }()
	dbar = group.VarTimeMSM(z, ds)
	<-done
	if err := verifyDLEQ(d[:], serverKeys[s], abar, dbar, res.DLEQ); err != nil {
		return fmt.Errorf("verify step %d: opening and stripping: %w", s, err)
	}
	return res.checkShares()
}

// checkShape validates a result's dimensions for n vectors at server s of m.
func (res *StepResult) checkShape(n, m, s int) error {
	w := m - s
	if res == nil {
		return errors.New("nil step result")
	}
	if res.S != s || res.M != m {
		return fmt.Errorf("result for server %d of %d, want %d of %d", res.S, res.M, s, m)
	}
	if len(res.U) != n || len(res.Shuffled) != n || len(res.Stripped) != n {
		return fmt.Errorf("result has %d shares, %d outputs, %d stripped rows, want %d", len(res.U), len(res.Shuffled), len(res.Stripped), n)
	}
	for q := range n {
		if res.U[q] == nil {
			return fmt.Errorf("share %d is nil", q)
		}
		if len(res.Shuffled[q]) != w || len(res.Stripped[q]) != w {
			return fmt.Errorf("output %d has %d and %d components, want %d", q, len(res.Shuffled[q]), len(res.Stripped[q]), w)
		}
		for j := range w {
			if res.Shuffled[q][j].A == nil || res.Shuffled[q][j].B == nil || res.Stripped[q][j] == nil {
				return fmt.Errorf("output %d component %d is nil", q, j)
			}
		}
	}
	if res.ShuffleProof == nil || len(res.DLEQ) != DLEQProofSize {
		return errors.New("missing proof")
	}
	return nil
}

// checkShares applies §4.2 step 3's rule to U and, at the last server,
// to the pseudonym list. It reads their encodings (kept or made now): the
// identity is the only element encoded as 32 zero bytes, and equal
// elements have equal canonical encodings.
func (res *StepResult) checkShares() error {
	const e = group.ElementSize
	enc := res.encodeElements()
	n := len(res.U)
	if err := distinct(n, func(p int) []byte { return enc[e*p : e*p+e] }, res.S, false); err != nil {
		return err
	}
	if res.S == res.M-1 && n > 0 {
		w := len(res.Stripped[0])
		st := e*n + 2*e*n*w
		return distinct(n, func(q int) []byte { return enc[st+e*q*w : st+e*q*w+e] }, res.S, true)
	}
	return nil
}

var identityEncoding [group.ElementSize]byte

func distinct(n int, enc func(int) []byte, s int, pseudonym bool) error {
	seen := make(map[[group.ElementSize]byte]int, n)
	for p := range n {
		k := [group.ElementSize]byte(enc(p))
		if k == identityEncoding {
			return &ShareError{Server: s, Pseudonym: pseudonym, Position: p, Duplicate: -1}
		}
		if prev, ok := seen[k]; ok {
			return &ShareError{Server: s, Pseudonym: pseudonym, Position: p, Duplicate: prev}
		}
		seen[k] = p
	}
	return nil
}

// Next returns the next server's input vectors (§4.2): at output
// position q, (Shuffled[q][j].A, Stripped[q][j]) for j < m − s. At the last
// server it returns nil: what is left is the pseudonym list.
func (res *StepResult) Next() [][]group.Ciphertext {
	if res.S == res.M-1 {
		return nil
	}
	out := make([][]group.Ciphertext, len(res.Shuffled))
	for q, v := range res.Shuffled {
		row := make([]group.Ciphertext, len(v))
		for j, ct := range v {
			row[j] = group.Ciphertext{A: ct.A, B: res.Stripped[q][j]}
		}
		out[q] = row
	}
	// The next step hashes these vectors: hand on their encodings.
	if n := len(out); n > 0 && res.elemEnc.of(res.flatElements()) {
		const e = group.ElementSize
		w := len(out[0])
		enc, sh, st := res.elemEnc.enc, e*n, e*n+2*e*n*w
		next := make([]byte, 0, 2*e*n*w)
		for i := range n * w {
			next = append(next, enc[sh+2*e*i:sh+2*e*i+e]...)
			next = append(next, enc[st+e*i:st+e*i+e]...)
		}
		rememberVectors(out, next)
	}
	return out
}

// Pseudonyms returns the pseudonym list P_q in final output order, from the
// last server's result (§4.2 step 3), or nil from any other server.
func (res *StepResult) Pseudonyms() []*group.Element {
	if res.S != res.M-1 {
		return nil
	}
	out := make([]*group.Element, len(res.Stripped))
	for q, v := range res.Stripped {
		out[q] = v[0]
	}
	return out
}

// StepResultSize is the encoded size of a step result for n vectors at
// server s of m: U (32n) || shuffled (64·n·w) || stripped (32·n·w) || the
// shuffle proof || the DLEQ (64), with w = m − s. It returns -1 for
// parameters out of range.
func StepResultSize(n, m, s int) int {
	if m < 1 || m > MaxServers || s < 0 || s >= m || n < 1 || n > MaxClients {
		return -1
	}
	w := m - s
	ps := shuffle.ProofSize(n, w)
	if ps < 0 {
		return -1
	}
	return group.ElementSize*n + group.CiphertextSize*n*w + group.ElementSize*n*w + ps + DLEQProofSize
}

// MarshalBinary encodes the result as StepResultSize describes; every
// list is in position order, components in order.
func (res *StepResult) MarshalBinary() ([]byte, error) {
	if res.wire != nil {
		return append([]byte(nil), res.wire...), nil
	}
	n := len(res.U)
	if err := res.checkShape(n, res.M, res.S); err != nil {
		return nil, fmt.Errorf("step result: %w", err)
	}
	size := StepResultSize(n, res.M, res.S)
	if size < 0 {
		return nil, fmt.Errorf("step result: %d vectors at server %d of %d out of range", n, res.S, res.M)
	}
	proof, err := res.ShuffleProof.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("step result: %w", err)
	}
	out := append(res.encodeElements(), proof...)
	return append(out, res.DLEQ...), nil
}

// ParseStepResult decodes server s's result for n vectors and m servers.
// Every element must be canonical. The identity is accepted here (an
// identity U or P is the client's fault, reported by VerifyStep once the
// proofs hold); the shuffle proof is parsed strictly by its package.
func ParseStepResult(b []byte, n, m, s int) (*StepResult, error) {
	size := StepResultSize(n, m, s)
	if size < 0 {
		return nil, fmt.Errorf("step result: %d vectors at server %d of %d out of range", n, s, m)
	}
	if len(b) != size {
		return nil, fmt.Errorf("step result: %w: %d bytes, want %d", group.ErrLength, len(b), size)
	}
	w := m - s
	const e = group.ElementSize
	count := n + 2*n*w + n*w
	elems := make([]*group.Element, count)
	errs := make([]error, (count+255)/256)
	parallel(len(errs), func(c int) {
		for i := c * 256; i < min((c+1)*256, count); i++ {
			el, err := group.DecodeElement(b[i*e : (i+1)*e])
			if err != nil {
				errs[c] = fmt.Errorf("element %d: %w", i, err)
				return
			}
			elems[i] = el
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("step result: %w", err)
		}
	}
	res := &StepResult{S: s, M: m, U: elems[:n:n], Shuffled: make([][]group.Ciphertext, n), Stripped: make([][]*group.Element, n),
		// A copy of the list: U shares elems' array, and replacing U[p]
		// must not go unnoticed.
		elemEnc: &encoded{elems: append([]*group.Element(nil), elems...), enc: append([]byte(nil), b[:count*e]...)}}
	sh, st := elems[n:n+2*n*w], elems[n+2*n*w:]
	for q := range n {
		row := make([]group.Ciphertext, w)
		for j := range w {
			row[j] = group.Ciphertext{A: sh[2*(q*w+j)], B: sh[2*(q*w+j)+1]}
		}
		res.Shuffled[q] = row
		res.Stripped[q] = st[q*w : (q+1)*w : (q+1)*w]
	}
	off := count * e
	ps := shuffle.ProofSize(n, w)
	proof, err := shuffle.Parse(b[off:off+ps], n, w)
	if err != nil {
		return nil, fmt.Errorf("step result: %w", err)
	}
	res.ShuffleProof = proof
	dleq := b[off+ps:]
	for i := 0; i < 2; i++ {
		if _, err := group.DecodeScalar(dleq[i*group.ScalarSize : (i+1)*group.ScalarSize]); err != nil {
			return nil, fmt.Errorf("step result dleq: %w", err)
		}
	}
	res.DLEQ = append([]byte(nil), dleq...)
	return res, nil
}

// routeComponent is the component of server s's vectors that the next layer
// opens: the first shuffled one (s+1, or the pseudonym m at the last server).
func routeComponent(s int) int { return s + 1 }

// ProveRoute is blame step 1 (§8 v2): it names the input position that
// became output position outPos at this server and proves, from the kept
// re-randomisation scalar, that the output vector there re-encrypts that
// input vector on the component the next layer opens.
func (ss *StepSecret) ProveRoute(epoch EpochID, serverKeys []*group.Element, inputs [][]group.Ciphertext, res *StepResult, outPos int, rand io.Reader) (inPos int, proof []byte, err error) {
	if ss.wit == nil || ss.wit.Pi == nil {
		return 0, nil, errors.New("route proof: step secret closed")
	}
	if outPos < 0 || outPos >= len(ss.wit.Pi) {
		return 0, nil, fmt.Errorf("route proof: output position %d of %d", outPos, len(ss.wit.Pi))
	}
	keys, err := AggregateKeys(serverKeys, ss.s)
	if err != nil {
		return 0, nil, fmt.Errorf("route proof: %w", err)
	}
	inPos = ss.wit.Pi[outPos]
	proof, err = ProveReencryption(epoch, ss.s, inPos, outPos, routeComponent(ss.s), keys[1],
		inputs[inPos][1], res.Shuffled[outPos][0], ss.wit.R[outPos][0], rand)
	return inPos, proof, err
}

// VerifyRoute checks a blame step-1 proof of server s against its published
// setup step.
func VerifyRoute(epoch EpochID, s int, serverKeys []*group.Element, inputs [][]group.Ciphertext, res *StepResult, outPos, inPos int, proof []byte) error {
	keys, err := AggregateKeys(serverKeys, s)
	if err != nil {
		return fmt.Errorf("route proof: %w", err)
	}
	n := len(inputs)
	if res == nil {
		return errors.New("route proof: no setup result")
	}
	if inPos < 0 || inPos >= n || outPos < 0 || outPos >= n || len(res.Shuffled) != n || len(inputs[inPos]) < 2 || len(res.Shuffled[outPos]) < 1 {
		return fmt.Errorf("route proof: positions %d → %d out of range for %d vectors", inPos, outPos, n)
	}
	return VerifyReencryption(epoch, s, inPos, outPos, routeComponent(s), keys[1], inputs[inPos][1], res.Shuffled[outPos][0], proof)
}
