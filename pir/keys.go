// Package pir is riffle's multi-server XOR private information retrieval
// (§6): the per-(client, server) seeds and the AES-256-CTR masks and pads
// derived from them (§6.2), the client's query and answer handling (§6.1,
// §6.3), and the server's answering engine, which answers all queries of a
// round in one cache-blocked pass over the database with the method of four
// Russians (§6.3, §9).
//
// The package is pure code over bytes: it knows nothing of the network, the
// store or the epoch descriptor. Byte layouts are fixed in docs/proto-pir.md.
package pir

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// Sizes and domain tags of §6.2.
const (
	// PublicKeySize is the size of an X25519 public key.
	PublicKeySize = 32
	// SharedSize is the size of an X25519 shared secret.
	SharedSize = 32
	// EpochIDSize is the size of an epoch id (a SHA-256 digest, §3).
	EpochIDSize = 32
	// SeedSize is the HKDF output length of seed_{i,j}.
	SeedSize = 32
	// KeySize is the HKDF output length of each AES-256 key (pir-mask, pir-pad).
	KeySize = 32
	// ivSize is the AES-CTR IV: u64 round || u32 slot || u32 block counter 0.
	ivSize = 16
	// maxStream bounds a keystream so that the 32-bit block counter in the
	// IV's low word never wraps into the slot field (2^32 blocks of 16 bytes):
	// this is what makes the (round, slot) nonces disjoint, never a ratchet.
	maxStream = 1 << 36

	tagSeed = "riffle/v2/pir"
	tagMask = "riffle/v2/pir-mask"
	tagPad  = "riffle/v2/pir-pad"
)

// ErrSize reports a length that does not match the round or the epoch.
var ErrSize = errors.New("pir: size mismatch")

// Keys are the two independent AES-256 keys that one client shares with one
// server for one epoch (§6.2 v2): one for masks, one for pads. A Keys value is
// safe for concurrent use until Close.
type Keys struct {
	mask, pad []byte // KeySize each; zeroised by Close
	maskBlock cipher.Block
	padBlock  cipher.Block
}

// DeriveKeys derives the mask and pad keys from an X25519 shared secret:
//
//	seed = HKDF-SHA-256(ikm = shared, salt = epoch id,
//	                    info = "riffle/v2/pir" || clientPub || serverPub), 32 bytes
//	mask key = HKDF-SHA-256(ikm = seed, salt = empty, info = "riffle/v2/pir-mask"), 32 bytes
//	pad key  = HKDF-SHA-256(ikm = seed, salt = empty, info = "riffle/v2/pir-pad"), 32 bytes
//
// clientPub is the client's registration X25519 key, serverPub the server's
// epoch key D_j. The seed is zeroised before returning.
func DeriveKeys(shared []byte, epoch [EpochIDSize]byte, clientPub, serverPub []byte) (*Keys, error) {
	if len(shared) != SharedSize {
		return nil, fmt.Errorf("%w: shared secret of %d bytes, want %d", ErrSize, len(shared), SharedSize)
	}
	if len(clientPub) != PublicKeySize || len(serverPub) != PublicKeySize {
		return nil, fmt.Errorf("%w: public keys of %d and %d bytes, want %d", ErrSize, len(clientPub), len(serverPub), PublicKeySize)
	}
	info := make([]byte, 0, len(tagSeed)+2*PublicKeySize)
	info = append(info, tagSeed...)
	info = append(info, clientPub...)
	info = append(info, serverPub...)
	seed, err := hkdf.Key(sha256.New, shared, epoch[:], string(info), SeedSize)
	if err != nil {
		return nil, fmt.Errorf("pir: derive seed: %w", err)
	}
	defer clear(seed)
	k := &Keys{}
	if k.mask, err = hkdf.Key(sha256.New, seed, nil, tagMask, KeySize); err != nil {
		return nil, fmt.Errorf("pir: derive mask key: %w", err)
	}
	if k.pad, err = hkdf.Key(sha256.New, seed, nil, tagPad, KeySize); err != nil {
		k.Close()
		return nil, fmt.Errorf("pir: derive pad key: %w", err)
	}
	if k.maskBlock, err = aes.NewCipher(k.mask); err != nil {
		k.Close()
		return nil, fmt.Errorf("pir: mask cipher: %w", err)
	}
	if k.padBlock, err = aes.NewCipher(k.pad); err != nil {
		k.Close()
		return nil, fmt.Errorf("pir: pad cipher: %w", err)
	}
	return k, nil
}

// ClientKeys does the client's side of §6.2: X25519 of the client's epoch
// secret with server j's D_j, then DeriveKeys. crypto/ecdh rejects a peer key
// that gives the all-zero shared secret (a low-order point).
func ClientKeys(priv *ecdh.PrivateKey, epoch [EpochIDSize]byte, serverPub []byte) (*Keys, error) {
	return dhKeys(priv, epoch, priv.PublicKey().Bytes(), serverPub, serverPub)
}

// ServerKeys does server j's side of §6.2: X25519 of D_j's secret with the
// client's registered X25519 key, then DeriveKeys.
func ServerKeys(priv *ecdh.PrivateKey, epoch [EpochIDSize]byte, clientPub []byte) (*Keys, error) {
	return dhKeys(priv, epoch, clientPub, priv.PublicKey().Bytes(), clientPub)
}

func dhKeys(priv *ecdh.PrivateKey, epoch [EpochIDSize]byte, clientPub, serverPub, peer []byte) (*Keys, error) {
	if priv == nil || priv.Curve() != ecdh.X25519() {
		return nil, errors.New("pir: need an X25519 private key")
	}
	pk, err := ecdh.X25519().NewPublicKey(peer)
	if err != nil {
		return nil, fmt.Errorf("pir: peer X25519 key of %d bytes: %w", len(peer), err)
	}
	shared, err := priv.ECDH(pk)
	if err != nil {
		return nil, fmt.Errorf("pir: X25519: %w", err)
	}
	defer clear(shared)
	return DeriveKeys(shared, epoch, clientPub, serverPub)
}

// Close zeroises the key bytes. The expanded AES key schedules inside the
// standard library cannot be reached; they are dropped for the collector.
func (k *Keys) Close() {
	if k == nil {
		return
	}
	clear(k.mask)
	clear(k.pad)
	k.maskBlock, k.padBlock = nil, nil
}

// iv builds the §6.2 CTR IV: u64 round || u32 slot || u32 0, big-endian.
func iv(round uint64, slot uint32) [ivSize]byte {
	var v [ivSize]byte
	binary.BigEndian.PutUint64(v[0:8], round)
	binary.BigEndian.PutUint32(v[8:12], slot)
	return v
}

// xorStream XORs the keystream of block for (round, slot) into dst.
func xorStream(block cipher.Block, round uint64, slot uint32, dst []byte) {
	if block == nil {
		panic("pir: keys used after Close")
	}
	if len(dst) > maxStream {
		panic(fmt.Sprintf("pir: keystream of %d bytes exceeds %d", len(dst), maxStream))
	}
	v := iv(round, slot)
	cipher.NewCTR(block, v[:]).XORKeyStream(dst, dst)
}

// MaskBytes is the length of a mask over L rows: ceil(L/8) bytes.
func MaskBytes(L int) int { return (L + 7) / 8 }

// Mask returns mask_j for (round, slot) over L rows (§6.2): the first
// MaskBytes(L) bytes of the mask keystream, row i being bit i%8 of byte i/8,
// with the unused high bits of the last byte cleared.
func (k *Keys) Mask(round uint64, slot uint32, L int) []byte {
	m := make([]byte, MaskBytes(L))
	xorStream(k.maskBlock, round, slot, m)
	clearUnused(m, L)
	return m
}

// Pad returns pad_j for (round, slot): b bytes of the pad keystream.
func (k *Keys) Pad(round uint64, slot uint32, b int) []byte {
	p := make([]byte, b)
	xorStream(k.padBlock, round, slot, p)
	return p
}

// XORPad XORs pad_j for (round, slot) of len(buf) bytes into buf, in place:
// a non-primary server adds its pad with it, a client removes it.
func (k *Keys) XORPad(round uint64, slot uint32, buf []byte) {
	xorStream(k.padBlock, round, slot, buf)
}

// clearUnused zeroes the bits of m at positions ≥ L.
func clearUnused(m []byte, L int) {
	if r := L % 8; r != 0 && len(m) > 0 {
		m[len(m)-1] &= byte(1)<<r - 1
	}
}
