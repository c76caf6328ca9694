package mix

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/riffle-net/riffle/internal/group"
)

// Sizes of the onion layers (§5.1).
const (
	// LayerKeySize is the length of each HKDF output: one AES-256 key.
	LayerKeySize = 32
	// TagSize is the GMAC tag appended by every layer.
	TagSize = 16
	// gcmNonceSize is the GMAC nonce: u64 round || u32 j.
	gcmNonceSize = 12
	// macPrefixSize is the associated data before the ciphertext:
	// epoch id (32) || u64 round || u32 j.
	macPrefixSize = 32 + 8 + 4
)

// LayerKey is one onion layer's pair of keys for one round (§4.2): e
// (AES-256-CTR) and a (GMAC), derived from the two round keys separately so
// that blame can reveal a without e (§8 v2).
type LayerKey struct {
	Enc [LayerKeySize]byte
	MAC [LayerKeySize]byte
}

// Close erases both keys.
func (k *LayerKey) Close() { clear(k.Enc[:]); clear(k.MAC[:]) }

// CloseLayerKeys erases a slice of layer keys.
func CloseLayerKeys(keys []LayerKey) {
	for i := range keys {
		keys[i].Close()
	}
}

// ShareKey derives a layer key from its Diffie–Hellman share Z (§4.2):
// HKDF-SHA-256(ikm = ENC(Z), salt = epoch id, info = tag || u32 s || u64 r),
// with tag "riffle/v2/layer-enc" for EncKey and "riffle/v2/layer-mac" for
// MACKey, 32 bytes. Blame (§8) uses it on a revealed, proven Z'.
func ShareKey(epoch EpochID, s int, round uint64, kind KeyKind, Z *group.Element) [LayerKeySize]byte {
	var ikm [group.ElementSize]byte
	copy(ikm[:], Z.Bytes())
	return shareKey(epoch, s, round, kind, &ikm)
}

// shareKey is ShareKey from ENC(Z); it erases ikm.
func shareKey(epoch EpochID, s int, round uint64, kind KeyKind, ikm *[group.ElementSize]byte) [LayerKeySize]byte {
	tag := tagLayerEnc
	if kind == MACKey {
		tag = tagLayerMAC
	}
	info := make([]byte, 0, len(tag)+12)
	info = append(info, tag...)
	info = binary.BigEndian.AppendUint32(info, uint32(s))
	info = binary.BigEndian.AppendUint64(info, round)
	k, err := hkdf.Key(sha256.New, ikm[:], epoch[:], string(info), LayerKeySize)
	if err != nil {
		panic(err) // unreachable: 32 bytes is far below HKDF-SHA-256's limit
	}
	var out [LayerKeySize]byte
	copy(out[:], k)
	clear(k)
	clear(ikm[:])
	return out
}

// dhKey derives a layer key from the Diffie–Hellman share x·P, x one
// party's secret and P the other's public element. pair is nil but in a
// riffletest build with the memo on (dhmemo_riffletest.go): then it is
// ENC(U) || ENC(Y), the client's and the server's public elements, of
// which x·P is the Diffie–Hellman function, so the party that comes
// second takes the share the first computed.
func dhKey(epoch EpochID, s int, round uint64, kind KeyKind, x *group.Scalar, P *group.Element, pair *[2 * group.ElementSize]byte) [LayerKeySize]byte {
	var ikm [group.ElementSize]byte
	if pair != nil && dhMemoTake(pair, &ikm) {
		return shareKey(epoch, s, round, kind, &ikm)
	}
	Z := group.NewElement().ScalarMult(x, P)
	copy(ikm[:], Z.Bytes())
	Z.Set(group.NewElement())
	if pair != nil {
		dhMemoPut(pair, &ikm)
	}
	return shareKey(epoch, s, round, kind, &ikm)
}

// ServerLayerKeys derives server s's layer keys for one round at every input
// position p from the published shares U_{p,s} (§4.2): 2n constant-time
// scalar multiplications, spread over all cores.
func ServerLayerKeys(epoch EpochID, s int, round uint64, rk *RoundKeys, U []*group.Element) ([]LayerKey, error) {
	y, yp, err := rk.round(round)
	if err != nil {
		return nil, err
	}
	for p, u := range U {
		if u == nil || group.IsIdentity(u) {
			return nil, fmt.Errorf("layer keys: share at position %d: %w", p, group.ErrIdentity)
		}
	}
	var yEnc, ypEnc []byte
	if dhMemoOn() {
		yEnc, ypEnc = rk.Y[round].Bytes(), rk.Yp[round].Bytes()
	}
	out := make([]LayerKey, len(U))
	parallel(len(U), func(p int) {
		var pe, pm *[2 * group.ElementSize]byte
		if dhMemoOn() {
			u := U[p].Bytes()
			pe, pm = dhPair(u, yEnc), dhPair(u, ypEnc)
		}
		out[p].Enc = dhKey(epoch, s, round, EncKey, y, U[p], pe)
		out[p].MAC = dhKey(epoch, s, round, MACKey, yp, U[p], pm)
	})
	return out, nil
}

// LayerKeys derives the client's m layer keys for one round from its u_{i,j}
// and the servers' published round keys, Y[j][r] and Yp[j][r] (§4.2).
func (cs *ClientSecret) LayerKeys(epoch EpochID, round uint64, Y, Yp [][]*group.Element) ([]LayerKey, error) {
	if cs.closed {
		return nil, errors.New("client layer keys: secret closed")
	}
	m := len(cs.u)
	if len(Y) != m || len(Yp) != m {
		return nil, fmt.Errorf("client layer keys: %d and %d servers' round keys, want %d", len(Y), len(Yp), m)
	}
	out := make([]LayerKey, m)
	for j := range m {
		if round >= uint64(len(Y[j])) || round >= uint64(len(Yp[j])) {
			return nil, fmt.Errorf("client layer keys: round %d, server %d has %d round keys", round, j, min(len(Y[j]), len(Yp[j])))
		}
		y, yp := Y[j][round], Yp[j][round]
		if y == nil || yp == nil || group.IsIdentity(y) || group.IsIdentity(yp) {
			return nil, fmt.Errorf("client layer keys: server %d round %d key: %w", j, round, group.ErrIdentity)
		}
		var pe, pm *[2 * group.ElementSize]byte
		if dhMemoOn() && cs.uEnc != nil {
			pe, pm = dhPair(cs.uEnc[j][:], y.Bytes()), dhPair(cs.uEnc[j][:], yp.Bytes())
		}
		out[j].Enc = dhKey(epoch, j, round, EncKey, cs.u[j], y, pe)
		out[j].MAC = dhKey(epoch, j, round, MACKey, cs.u[j], yp, pm)
	}
	return out, nil
}

// layerIV is the CTR IV of layer j in a round: u64 round || u32 j || u32 0.
func layerIV(round uint64, j int) [aes.BlockSize]byte {
	var iv [aes.BlockSize]byte
	binary.BigEndian.PutUint64(iv[:8], round)
	binary.BigEndian.PutUint32(iv[8:12], uint32(j))
	return iv
}

// macNonce is the GMAC nonce of layer j in a round: u64 round || u32 j.
func macNonce(round uint64, j int) [gcmNonceSize]byte {
	var n [gcmNonceSize]byte
	binary.BigEndian.PutUint64(n[:8], round)
	binary.BigEndian.PutUint32(n[8:], uint32(j))
	return n
}

// putMACPrefix writes the associated data before the ciphertext:
// epoch id || u64 round || u32 j.
func putMACPrefix(dst []byte, epoch EpochID, round uint64, j int) {
	copy(dst, epoch[:])
	binary.BigEndian.PutUint64(dst[32:40], round)
	binary.BigEndian.PutUint32(dst[40:44], uint32(j))
}

// layerCrypter holds the two ciphers of one layer key.
type layerCrypter struct {
	ctr cipher.Stream
	mac cipher.AEAD
}

func newLayerCrypter(k *LayerKey, round uint64, j int) (layerCrypter, error) {
	eb, err := aes.NewCipher(k.Enc[:])
	if err != nil {
		return layerCrypter{}, err
	}
	iv := layerIV(round, j)
	mb, err := aes.NewCipher(k.MAC[:])
	if err != nil {
		return layerCrypter{}, err
	}
	g, err := cipher.NewGCM(mb)
	if err != nil {
		return layerCrypter{}, err
	}
	return layerCrypter{ctr: cipher.NewCTR(eb, iv[:]), mac: g}, nil
}

// Seal builds a client's onion for one round (§5.1): for j = m-1 down to
// 0, c = AES-256-CTR(e_j, IV = u64 round || u32 j || u32 0)(x) and x' = c ||
// GMAC(a_j, nonce = u64 round || u32 j, data = epoch id || u64 round || u32 j
// || c). The result has len(payload) + 16·m bytes. A client seals each round
// once and stores the result (§5.1 v2): sealing again reuses each key
// with its nonce.
func Seal(epoch EpochID, round uint64, keys []LayerKey, payload []byte) ([]byte, error) {
	onion, _, err := SealInto(nil, epoch, round, keys, payload)
	return onion, err
}

// SealInto is Seal building the onion in scratch when it is large enough
// (a client seals one onion a round: recycling the buffer of an onion whose
// round is over saves an allocation of its size). It returns the onion, a
// slice of the buffer used, and that buffer, to be passed again once the
// onion is no longer needed.
func SealInto(scratch []byte, epoch EpochID, round uint64, keys []LayerKey, payload []byte) (onion, buf []byte, err error) {
	m := len(keys)
	if m < 1 || m > MaxServers {
		return nil, nil, fmt.Errorf("seal: %d layer keys, want 1..%d", m, MaxServers)
	}
	// The associated data is prefix || c; keeping the onion right after a
	// prefix slot lets every layer MAC in place without copying. Every
	// byte of buf is written below: a recycled buffer needs no clearing.
	size := macPrefixSize + len(payload) + TagSize*m
	if cap(scratch) >= size {
		buf = scratch[:size]
	} else {
		buf = make([]byte, size)
	}
	n := len(payload)
	copy(buf[macPrefixSize:], payload)
	for j := m - 1; j >= 0; j-- {
		lc, err := newLayerCrypter(&keys[j], round, j)
		if err != nil {
			return nil, nil, fmt.Errorf("seal layer %d: %w", j, err)
		}
		c := buf[macPrefixSize : macPrefixSize+n]
		lc.ctr.XORKeyStream(c, c)
		putMACPrefix(buf, epoch, round, j)
		nonce := macNonce(round, j)
		lc.mac.Seal(buf[macPrefixSize+n:macPrefixSize+n], nonce[:], nil, buf[:macPrefixSize+n])
		n += TagSize
	}
	return buf[macPrefixSize:], buf, nil
}

// MACError reports the input positions whose onion failed to open at one
// layer: a wrong size or a MAC that does not verify. By §5.2 (v2) the
// server then forwards nothing for the round and blame starts at each.
type MACError struct {
	Server    int
	Round     uint64
	Positions []int
}

func (e *MACError) Error() string {
	const show = 16
	var b strings.Builder
	fmt.Fprintf(&b, "layer %d, round %d: %d onions fail to open, at positions", e.Server, e.Round, len(e.Positions))
	for i, p := range e.Positions {
		if i == show {
			fmt.Fprintf(&b, " … (%d more)", len(e.Positions)-show)
			break
		}
		fmt.Fprintf(&b, " %d", p)
	}
	return b.String()
}

// OpenLayer checks the MAC and decrypts layer s of every onion of one round,
// in input-position order, with keys from ServerLayerKeys (§5.2). Every
// onion must be as long as the batch's most common length (the caller checks
// that length against OnionSize − 16·s); an onion of another length fails
// at its own position only, so that one malformed entry never makes the
// honest entries look bad. The work is spread over all cores; besides the outputs
// (one allocation for the batch), each worker uses one scratch buffer for
// the whole batch. If any position fails, the result is nil and the error is
// a *MACError naming all of them: nothing may be forwarded (§5.2 v2).
func OpenLayer(epoch EpochID, round uint64, s int, keys []LayerKey, onions [][]byte) ([][]byte, error) {
	size := commonLength(onions)
	if size < TagSize {
		return OpenLayerInto(nil, epoch, round, s, keys, onions)
	}
	body := size - TagSize
	slab := make([]byte, body*len(onions))
	dst := make([][]byte, len(onions))
	for p := range dst {
		dst[p] = slab[p*body : (p+1)*body : (p+1)*body]
	}
	return OpenLayerInto(dst, epoch, round, s, keys, onions)
}

// OpenLayerInto is OpenLayer writing into caller-owned buffers, so that a
// server can reuse one set of buffers round after round: dst[p] receives
// input p's plaintext and must have room for len(onions[p]) − 16 bytes
// (dst == nil allocates per position). On success it returns dst resliced
// to the plaintexts; on failure their content is unspecified.
func OpenLayerInto(dst [][]byte, epoch EpochID, round uint64, s int, keys []LayerKey, onions [][]byte) ([][]byte, error) {
	return OpenLayerSkipInto(dst, epoch, round, s, keys, onions, nil)
}

// OpenLayerSkip is OpenLayer for a batch with dead input positions (a slot
// that a round blame named, docs/protocol.md §8 "A dead slot"): a dead
// position is treated as absent. Its entry is neither checked nor
// decrypted, whatever it holds, and its output is the fixed filler, all
// zeros of the batch's plaintext length, so that the batch keeps its
// shape and the filler lands, after the permutation, at the dead position
// of the next server's input. Only the live positions can fail.
func OpenLayerSkip(epoch EpochID, round uint64, s int, keys []LayerKey, onions [][]byte, dead []int) ([][]byte, error) {
	return OpenLayerSkipInto(nil, epoch, round, s, keys, onions, dead)
}

// OpenLayerSkipInto is OpenLayerSkip writing into caller-owned buffers, as
// OpenLayerInto does.
func OpenLayerSkipInto(dst [][]byte, epoch EpochID, round uint64, s int, keys []LayerKey, onions [][]byte, dead []int) ([][]byte, error) {
	n := len(onions)
	if len(keys) != n {
		return nil, fmt.Errorf("open layer %d: %d keys for %d onions", s, len(keys), n)
	}
	if dst != nil && len(dst) != n {
		return nil, fmt.Errorf("open layer %d: %d output buffers for %d onions", s, len(dst), n)
	}
	if n == 0 {
		return nil, nil
	}
	size := commonLength(onions)
	out := make([][]byte, n)
	skip := make(map[int]bool, len(dead))
	for _, p := range dead {
		if p < 0 || p >= n {
			return nil, fmt.Errorf("open layer %d: dead position %d of %d", s, p, n)
		}
		skip[p] = true
	}
	if size < TagSize && len(skip) > 0 {
		return nil, fmt.Errorf("open layer %d: entries of %d bytes", s, size)
	}
	var mu sync.Mutex
	var bad []int
	fail := func(p int) {
		mu.Lock()
		bad = append(bad, p)
		mu.Unlock()
	}
	workers := min(runtime.GOMAXPROCS(0), n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			scratch := make([]byte, macPrefixSize+max(size-TagSize, 0))
			for {
				p := int(next.Add(1) - 1)
				if p >= n {
					return
				}
				o := onions[p]
				if skip[p] {
					body := size - TagSize
					var d []byte
					if dst == nil {
						d = make([]byte, body)
					} else if cap(dst[p]) >= body {
						d = dst[p][:body]
						clear(d)
					} else {
						fail(p)
						continue
					}
					out[p] = d
					continue
				}
				if len(o) != size || len(o) < TagSize {
					fail(p)
					continue
				}
				body := len(o) - TagSize
				var d []byte
				if dst == nil {
					d = make([]byte, body)
				} else if cap(dst[p]) >= body {
					d = dst[p][:body]
				} else {
					fail(p)
					continue
				}
				lc, err := newLayerCrypter(&keys[p], round, s)
				if err != nil {
					fail(p)
					continue
				}
				// The associated data is prefix || c, contiguous: one copy
				// into the worker's scratch, which then stays in cache for
				// the decryption.
				putMACPrefix(scratch, epoch, round, s)
				copy(scratch[macPrefixSize:], o[:body])
				nonce := macNonce(round, s)
				if _, err := lc.mac.Open(nil, nonce[:], o[body:], scratch[:macPrefixSize+body]); err != nil {
					fail(p)
					continue
				}
				lc.ctr.XORKeyStream(d, scratch[macPrefixSize:macPrefixSize+body])
				out[p] = d
			}
		}()
	}
	wg.Wait()
	if len(bad) > 0 {
		slices.Sort(bad)
		return nil, &MACError{Server: s, Round: round, Positions: bad}
	}
	return out, nil
}

// commonLength returns the most common length of the entries (the first
// such length on a tie), or 0 for none.
func commonLength(entries [][]byte) int {
	count := make(map[int]int)
	best, bestCount := 0, 0
	for _, e := range entries {
		count[len(e)]++
		if c := count[len(e)]; c > bestCount {
			best, bestCount = len(e), c
		}
	}
	return best
}

// CheckMAC verifies the tag of layer j of one onion under a MAC key alone, as
// every server does in blame with a key derived from a revealed share (docs/protocol.md
// §8).
func CheckMAC(epoch EpochID, round uint64, j int, macKey [LayerKeySize]byte, onion []byte) bool {
	if len(onion) < TagSize {
		return false
	}
	b, err := aes.NewCipher(macKey[:])
	if err != nil {
		return false
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		return false
	}
	body := len(onion) - TagSize
	aad := make([]byte, macPrefixSize+body)
	putMACPrefix(aad, epoch, round, j)
	copy(aad[macPrefixSize:], onion[:body])
	nonce := macNonce(round, j)
	_, err = g.Open(nil, nonce[:], onion[body:], aad)
	return err == nil
}

// DecryptLayer removes layer j of one onion with a known encryption key
// after its MAC has been checked, as blame step 3 does (§8).
func DecryptLayer(round uint64, j int, encKey [LayerKeySize]byte, onion []byte) ([]byte, error) {
	if len(onion) < TagSize {
		return nil, fmt.Errorf("decrypt layer %d: onion of %d bytes", j, len(onion))
	}
	b, err := aes.NewCipher(encKey[:])
	if err != nil {
		return nil, err
	}
	iv := layerIV(round, j)
	out := make([]byte, len(onion)-TagSize)
	cipher.NewCTR(b, iv[:]).XORKeyStream(out, onion[:len(out)])
	return out, nil
}

// Permute moves the entry at input position p to output position
// forward[p] (§4: π_s maps input p to output π_s(p)). It panics if
// forward is not a permutation of len(in) positions: that is a programming
// error, never an input from the network.
func Permute(forward []int, in [][]byte) [][]byte {
	if len(forward) != len(in) {
		panic(fmt.Sprintf("mix: permutation of %d positions applied to %d entries", len(forward), len(in)))
	}
	out := make([][]byte, len(in))
	seen := make([]bool, len(in))
	for p, q := range forward {
		if q < 0 || q >= len(out) || seen[q] {
			panic(fmt.Sprintf("mix: not a permutation at input %d (output %d)", p, q))
		}
		seen[q] = true
		out[q] = in[p]
	}
	return out
}

// parallel runs f(i) for i < n on all cores.
func parallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		}()
	}
	wg.Wait()
}
