package mix

import (
	"bytes"
	"crypto/ed25519"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/sigcache"
)

// Payload layout (§5.1).
const (
	// PayloadHeaderSize is u8 kind || u8 version || u16 reserved || u32 length.
	PayloadHeaderSize = 8
	// RequestSize is one requested chunk id (SHA-256).
	RequestSize = 32
	// PayloadVersion is the version byte of §5.1. Version 3 signs the
	// payload digest D (PayloadHash) instead of the SHA-256 of the
	// payload's bytes.
	PayloadVersion = 3
	// MaxChunkSize bounds b: the u32 length field allows more, but §5.1
	// names 4 MiB as the largest chunk size.
	MaxChunkSize = 4 << 20
	// MaxRequests bounds k, the request slots of a round.
	MaxRequests = 256
)

// Payload kinds (§5.1).
const (
	KindCover uint8 = 0
	KindChunk uint8 = 1
)

// PayloadSize is P = 8 + 32·k + b + 64 (§5.1).
func PayloadSize(b, k int) int { return PayloadHeaderSize + RequestSize*k + b + SignatureSize }

// OnionSize is P + 16·m: what every client uploads each round (§5.1).
func OnionSize(b, k, m int) int { return PayloadSize(b, k) + TagSize*m }

func checkParams(b, k int) error {
	if b < 1 || b > MaxChunkSize {
		return fmt.Errorf("chunk size %d, want 1..%d", b, MaxChunkSize)
	}
	if k < 0 || k > MaxRequests {
		return fmt.Errorf("request slots %d, want 0..%d", k, MaxRequests)
	}
	return nil
}

// Payload is the plaintext inside an onion (§5.1). Chunk holds the used
// bytes only (Length of them; after DecodePayload a slice of the raw
// payload, not a copy); Requests has exactly k entries after decoding,
// all-zero meaning none.
type Payload struct {
	Kind      uint8
	Length    uint32
	Requests  [][RequestSize]byte
	Chunk     []byte
	Signature [SignatureSize]byte
}

// marshal writes the payload's P bytes, signature field included.
func (p *Payload) marshal(b, k int) ([]byte, error) { return p.marshalInto(nil, b, k) }

// marshalInto is marshal into dst when it is large enough; every byte of
// the payload is written (dst may hold an old payload).
func (p *Payload) marshalInto(dst []byte, b, k int) ([]byte, error) {
	if err := checkParams(b, k); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	if p.Kind != KindCover && p.Kind != KindChunk {
		return nil, fmt.Errorf("payload: kind %d", p.Kind)
	}
	if uint64(p.Length) != uint64(len(p.Chunk)) || len(p.Chunk) > b {
		return nil, fmt.Errorf("payload: length %d with %d chunk bytes, chunk size %d", p.Length, len(p.Chunk), b)
	}
	if p.Kind == KindCover && p.Length != 0 {
		return nil, fmt.Errorf("payload: cover with %d chunk bytes", p.Length)
	}
	if len(p.Requests) > k {
		return nil, fmt.Errorf("payload: %d requests, %d slots", len(p.Requests), k)
	}
	var out []byte
	if size := PayloadSize(b, k); cap(dst) >= size {
		out = dst[:size]
		clear(out)
	} else {
		out = make([]byte, size)
	}
	out[0], out[1] = p.Kind, PayloadVersion
	binary.BigEndian.PutUint32(out[4:8], p.Length)
	for t, id := range p.Requests {
		copy(out[PayloadHeaderSize+t*RequestSize:], id[:])
	}
	copy(out[PayloadHeaderSize+k*RequestSize:], p.Chunk)
	copy(out[len(out)-SignatureSize:], p.Signature[:])
	return out, nil
}

// EncodePayload builds the payload for one round and signs it with the
// client's pseudonym key q over (epoch id, round, the bytes before the
// signature) (§5.1 v2).
func EncodePayload(p *Payload, b, k int, epoch EpochID, round uint64, cs *ClientSecret, rand io.Reader) ([]byte, error) {
	return EncodePayloadInto(nil, p, b, k, epoch, round, cs, rand)
}

// EncodePayloadInto is EncodePayload into dst when it is large enough (a
// client's payload buffer, free again once the onion is sealed).
func EncodePayloadInto(dst []byte, p *Payload, b, k int, epoch EpochID, round uint64, cs *ClientSecret, rand io.Reader) ([]byte, error) {
	if cs.closed {
		return nil, errors.New("payload: client secret closed")
	}
	out, err := p.marshalInto(dst, b, k)
	if err != nil {
		return nil, err
	}
	body := out[:len(out)-SignatureSize]
	h, err := hashPayload(out, b, k)
	if err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	sig, err := signPseudonym(cs.q, cs.P, epoch, round, h.Digest, rand)
	if err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	copy(out[len(body):], sig)
	return out, nil
}

// DecodePayload parses a payload strictly: its size, version 2, a known
// kind, zero reserved bits, a length within the chunk, zero padding after it
// and a canonical signature encoding. The signature itself is checked by
// VerifyPayloads against the pseudonym list.
func DecodePayload(raw []byte, b, k int) (*Payload, error) {
	if err := checkParams(b, k); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	if len(raw) != PayloadSize(b, k) {
		return nil, fmt.Errorf("payload: %w: %d bytes, want %d", group.ErrLength, len(raw), PayloadSize(b, k))
	}
	p := &Payload{Kind: raw[0], Length: binary.BigEndian.Uint32(raw[4:8])}
	if raw[1] != PayloadVersion {
		return nil, fmt.Errorf("payload: version %d, want %d", raw[1], PayloadVersion)
	}
	if p.Kind != KindCover && p.Kind != KindChunk {
		return nil, fmt.Errorf("payload: unknown kind %d", p.Kind)
	}
	if raw[2] != 0 || raw[3] != 0 {
		return nil, errors.New("payload: reserved bits set")
	}
	if uint64(p.Length) > uint64(b) {
		return nil, fmt.Errorf("payload: length %d exceeds chunk size %d", p.Length, b)
	}
	if p.Kind == KindCover && p.Length != 0 {
		return nil, fmt.Errorf("payload: cover with length %d", p.Length)
	}
	p.Requests = make([][RequestSize]byte, k)
	for t := range k {
		copy(p.Requests[t][:], raw[PayloadHeaderSize+t*RequestSize:])
	}
	chunk := raw[PayloadHeaderSize+k*RequestSize : PayloadHeaderSize+k*RequestSize+b]
	if i := nonZero(chunk[p.Length:]); i >= 0 {
		return nil, fmt.Errorf("payload: padding byte %d is not zero", int(p.Length)+i)
	}
	// The chunk aliases raw (no copy of up to 4 MiB per payload per
	// server); its capacity ends with it.
	p.Chunk = chunk[:p.Length:p.Length]
	sig := raw[len(raw)-SignatureSize:]
	if _, _, err := parseSchnorr(sig); err != nil {
		return nil, fmt.Errorf("payload signature: %w", err)
	}
	copy(p.Signature[:], sig)
	return p, nil
}

// PaddingRun returns the zero padding of a payload of the epoch's sizes:
// the n bytes at offset at after its chunk's Length used bytes (b of them
// for a cover), or n = 0 if raw is not such a payload or its padding is
// not all zero. What the last server publishes need not carry these bytes
// (wire.ZeroRun): every receiver puts them back.
func PaddingRun(raw []byte, b, k int) (at, n int) {
	if checkParams(b, k) != nil || len(raw) != PayloadSize(b, k) {
		return 0, 0
	}
	length := binary.BigEndian.Uint32(raw[4:8])
	if uint64(length) > uint64(b) {
		return 0, 0
	}
	at = PayloadHeaderSize + k*RequestSize + int(length)
	n = b - int(length)
	if n == 0 || nonZero(raw[at:at+n]) >= 0 {
		return 0, 0
	}
	return at, n
}

// zeroBlock is compared against in blocks: a cover payload is b zero bytes
// that every server checks every round.
var zeroBlock [4096]byte

// nonZero returns the index of the first non-zero byte of b, or -1.
func nonZero(b []byte) int {
	for off := 0; off < len(b); off += len(zeroBlock) {
		blk := b[off:min(len(b), off+len(zeroBlock))]
		if !bytes.Equal(blk, zeroBlock[:len(blk)]) {
			for i, c := range blk {
				if c != 0 {
					return off + i
				}
			}
		}
	}
	return -1
}

// PayloadHash is what one pass over a payload gives (§5.1, v3): the
// chunk id, SHA-256 of the chunk's Length bytes, and the payload digest
//
//	D = SHA-256(u32 17 ‖ "riffle/v3/payload" ‖ header (8) ‖ requests (32k) ‖ chunk id)
//
// which stands for the whole payload: the padding after the chunk is zero
// in every well-formed payload, so D, the signature and the sizes fix every
// byte. The pseudonym signature signs D, the published batch's Merkle leaf
// commits to D and the signature, and the store files the chunk under its
// id: the chunk's bytes are hashed once, and a cover's not at all.
type PayloadHash struct {
	Digest  [32]byte
	ChunkID [32]byte
}

// HashPayload checks that raw is a well-formed payload of the epoch's
// sizes (DecodePayload's rules) and returns its PayloadHash.
func HashPayload(raw []byte, b, k int) (PayloadHash, error) { return hashPayload(raw, b, k) }

func hashPayload(raw []byte, b, k int) (PayloadHash, error) {
	p, err := DecodePayload(raw, b, k)
	if err != nil {
		return PayloadHash{}, err
	}
	var h PayloadHash
	h.ChunkID = sha256.Sum256(p.Chunk)
	d := sha256.New()
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(len(tagPayload)))
	d.Write(l[:])
	d.Write([]byte(tagPayload))
	d.Write(raw[:PayloadHeaderSize+k*RequestSize])
	d.Write(h.ChunkID[:])
	d.Sum(h.Digest[:0])
	return h, nil
}

// HashPayloads is HashPayload of every payload, on all cores. A payload
// that is not well formed gets ok[q] false.
func HashPayloads(raws [][]byte, b, k int) (hs []PayloadHash, ok []bool) {
	hs, ok = make([]PayloadHash, len(raws)), make([]bool, len(raws))
	parallel(len(raws), func(q int) {
		h, err := hashPayload(raws[q], b, k)
		hs[q], ok[q] = h, err == nil
	})
	return hs, ok
}

// pseudonymChallenge hashes (P, R, epoch id, round, D).
func pseudonymChallenge(P, R *group.Element, epoch EpochID, round uint64, d [32]byte) *group.Scalar {
	return group.NewTranscript(tagPseudonymSig).Element(P).Element(R).Fixed(epoch[:]).U64(round).Fixed(d[:]).Challenge()
}

func signPseudonym(q *group.Scalar, P *group.Element, epoch EpochID, round uint64, d [32]byte, rand io.Reader) ([]byte, error) {
	st := group.NewTranscript(tagPseudonymSig).Element(P).Fixed(epoch[:]).U64(round).Fixed(d[:]).Sum()
	k, err := proverNonce(rand, q, st[:])
	if err != nil {
		return nil, err
	}
	R := group.NewElement().ScalarBaseMult(k)
	c := pseudonymChallenge(P, R, epoch, round, d)
	s := group.NewScalar().Multiply(c, q)
	s.Add(s, k)
	k.Zero()
	return append(append(make([]byte, 0, SignatureSize), R.Bytes()...), s.Bytes()...), nil
}

// usablePseudonym reports whether P can verify a signature at all: the
// identity would accept R = s·G for any s, with no key (§2 forbids the
// identity wherever a public key is expected; setup never publishes it, this
// guards callers whose list is wrong).
func usablePseudonym(P *group.Element) bool { return P != nil && !group.IsIdentity(P) }

// VerifyPayload checks one payload of the epoch's sizes: well formed, and
// its pseudonym signature against P, which must not be nil or the
// identity.
func VerifyPayload(epoch EpochID, round uint64, P *group.Element, raw []byte, b, k int) error {
	if !usablePseudonym(P) {
		return fmt.Errorf("payload signature: pseudonym: %w", group.ErrIdentity)
	}
	h, err := hashPayload(raw, b, k)
	if err != nil {
		return err
	}
	R, s, err := parseSchnorr(raw[len(raw)-SignatureSize:])
	if err != nil {
		return fmt.Errorf("payload signature: %w", err)
	}
	c := pseudonymChallenge(P, R, epoch, round, h.Digest)
	c.Negate(c)
	if group.NewElement().VarTimeDoubleScalarBaseMult(c, P, s).Equal(R) != 1 {
		return fmt.Errorf("payload signature: %w", ErrProof)
	}
	return nil
}

// VerifyPayloads checks the payload at every output position q (§5.3
// v2): well formed, with a pseudonym signature by P_q. It returns the
// failing positions, in order (a missing or malformed payload, or a nil or
// identity pseudonym, fails). It hashes on all cores and checks all
// signatures with one multi-scalar multiplication under fresh 128-bit
// weights from rand; only if that fails does it check one by one to name
// the culprits. A nil rand means crypto/rand; the weights must never be
// predictable by whoever made the payloads.
func VerifyPayloads(epoch EpochID, round uint64, pseudonyms []*group.Element, raws [][]byte, b, k int, rand io.Reader) (bad []int) {
	hs, ok := HashPayloads(raws, b, k)
	return VerifyPayloadsHashed(epoch, round, pseudonyms, raws, hs, ok, rand)
}

// VerifyPayloadsHashed is VerifyPayloads given HashPayloads(raws, b, k),
// which the receiver of a published batch has computed for its Merkle
// root: no payload is hashed again.
func VerifyPayloadsHashed(epoch EpochID, round uint64, pseudonyms []*group.Element, raws [][]byte, hs []PayloadHash, wellFormed []bool, rand io.Reader) (bad []int) {
	if rand == nil {
		rand = crand.Reader
	}
	n := len(pseudonyms)
	Rs := make([]*group.Element, n)
	ss := make([]*group.Scalar, n)
	cs := make([]*group.Scalar, n)
	ok := make([]bool, n)
	parallel(n, func(q int) {
		if q >= len(raws) || q >= len(hs) || q >= len(wellFormed) || !wellFormed[q] || len(raws[q]) < SignatureSize || !usablePseudonym(pseudonyms[q]) {
			return
		}
		raw := raws[q]
		R, s, err := parseSchnorr(raw[len(raw)-SignatureSize:])
		if err != nil {
			return
		}
		Rs[q], ss[q], cs[q], ok[q] = R, s, pseudonymChallenge(pseudonyms[q], R, epoch, round, hs[q].Digest), true
	})
	// Σ w_q·(s_q·G − R_q − c_q·P_q) = O.
	var scal []*group.Scalar
	var pts []*group.Element
	gsum := group.NewScalar()
	batchOK := true
	for q := range n {
		if !ok[q] {
			continue
		}
		w, err := group.RandomWeight(rand)
		if err != nil {
			batchOK = false
			break
		}
		gsum.Add(gsum, group.NewScalar().Multiply(w, ss[q]))
		scal = append(scal, group.NewScalar().Negate(w), group.NewScalar().Negate(group.NewScalar().Multiply(w, cs[q])))
		pts = append(pts, Rs[q], pseudonyms[q])
	}
	if batchOK {
		scal = append(scal, gsum)
		pts = append(pts, group.Base())
		batchOK = group.IsIdentity(group.VarTimeMSM(scal, pts))
	}
	for q := range n {
		if !ok[q] {
			bad = append(bad, q)
			continue
		}
		if !batchOK {
			c := group.NewScalar().Negate(cs[q])
			if group.NewElement().VarTimeDoubleScalarBaseMult(c, pseudonyms[q], ss[q]).Equal(Rs[q]) != 1 {
				bad = append(bad, q)
			}
		}
	}
	return bad
}

// submissionMessage is what a client's registration key signs for one onion
// (§5.1 v2): u32-prefixed tag "riffle/v2/submission" || epoch id ||
// u64 round || u32 slot || SHA-256(onion).
func submissionMessage(epoch EpochID, round uint64, slot uint32, onion []byte) []byte {
	return submissionDigestMessage(epoch, round, slot, SubmissionDigest(onion))
}

// SubmissionDigest is the SHA-256 of an onion, the part of a submission
// signature that stands for the onion (§5.1).
func SubmissionDigest(onion []byte) [32]byte { return sha256.Sum256(onion) }

func submissionDigestMessage(epoch EpochID, round uint64, slot uint32, d [32]byte) []byte {
	msg := make([]byte, 0, 4+len(tagSubmission)+32+8+4+32)
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(tagSubmission)))
	msg = append(msg, tagSubmission...)
	msg = append(msg, epoch[:]...)
	msg = binary.BigEndian.AppendUint64(msg, round)
	msg = binary.BigEndian.AppendUint32(msg, slot)
	return append(msg, d[:]...)
}

// SignSubmission signs an onion for (epoch, round, input slot) with the
// client's registration key (§5.1): binding the round stops a primary
// from replaying it in another round and framing the client.
func SignSubmission(key ed25519.PrivateKey, epoch EpochID, round uint64, slot uint32, onion []byte) []byte {
	return ed25519.Sign(key, submissionMessage(epoch, round, slot, onion))
}

// SignSubmissionDigest is SignSubmission given the onion's
// SubmissionDigest, for a client that needs the digest again (to check
// its primary's receipt) and so hashes the onion once.
func SignSubmissionDigest(key ed25519.PrivateKey, epoch EpochID, round uint64, slot uint32, digest [32]byte) []byte {
	return ed25519.Sign(key, submissionDigestMessage(epoch, round, slot, digest))
}

// VerifySubmissionDigest checks a signature made by SignSubmission given
// only the onion's SubmissionDigest: how servers after S_0, which never
// see the onion, check every slot of a round (§5.2). A signature that
// verified before in this process is not verified again (internal/sigcache).
func VerifySubmissionDigest(pub ed25519.PublicKey, epoch EpochID, round uint64, slot uint32, digest [32]byte, sig []byte) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("submission: registration key of %d bytes", len(pub))
	}
	if !sigcache.Verify(pub, submissionDigestMessage(epoch, round, slot, digest), sig) {
		return fmt.Errorf("submission for round %d, slot %d: bad signature", round, slot)
	}
	return nil
}

// VerifySubmission checks a signature made by SignSubmission.
func VerifySubmission(pub ed25519.PublicKey, epoch EpochID, round uint64, slot uint32, onion, sig []byte) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("submission: registration key of %d bytes", len(pub))
	}
	if !ed25519.Verify(pub, submissionMessage(epoch, round, slot, onion), sig) {
		return fmt.Errorf("submission for round %d, slot %d: bad signature", round, slot)
	}
	return nil
}
