// Package sigcache remembers the Ed25519 signatures that verified, so
// that a process checks each one once while it is remembered: a server
// meets a round's client signatures in several batches and a list's
// signatures more than once, every party checks a descriptor's signatures
// several times, and a process that runs several parties (a host with a
// server and a client, node's simulated networks) checks what each of
// them receives. Verification is a pure function of public bytes (key,
// message, signature), so a remembered success is the answer a second
// verification would give. Only successes are kept: a bad signature costs
// its verification every time, as before. The table holds two
// generations of at most genSize entries: a flood of valid signatures
// evicts older ones and costs only the verifications it evicted. It
// imports nothing of riffle.
package sigcache

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"sync"
)

// genSize is a generation's entries: a few hundred rounds' signatures of a
// small group, about 200 KiB.
const genSize = 4096

var (
	mu       sync.Mutex
	cur, old = map[[32]byte]struct{}{}, map[[32]byte]struct{}{}
)

// Key is the cache key of a verification: SHA-256 over a domain and
// each part, length-prefixed, so that two different verifications never
// share one.
func Key(domain string, parts ...[]byte) [32]byte {
	var buf [256]byte
	b := append(buf[:0], domain...)
	for _, p := range parts {
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	return sha256.Sum256(b)
}

// Seen reports whether the verification keyed k succeeded and is still
// remembered.
func Seen(k [32]byte) bool {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := cur[k]; ok {
		return true
	}
	if _, ok := old[k]; ok {
		addLocked(k)
		return true
	}
	return false
}

// Add remembers that the verification keyed k succeeded.
func Add(k [32]byte) {
	mu.Lock()
	defer mu.Unlock()
	addLocked(k)
}

func addLocked(k [32]byte) {
	if len(cur) >= genSize {
		old, cur = cur, make(map[[32]byte]struct{}, genSize)
	}
	cur[k] = struct{}{}
}

// Verify is ed25519.Verify, remembered: false for a key of the wrong size,
// as ed25519.Verify would panic.
func Verify(pub ed25519.PublicKey, msg, sig []byte) bool {
	if len(pub) != ed25519.PublicKeySize {
		return false
	}
	k := Key("ed25519", pub, msg, sig)
	if Seen(k) {
		return true
	}
	if !ed25519.Verify(pub, msg, sig) {
		return false
	}
	Add(k)
	return true
}
