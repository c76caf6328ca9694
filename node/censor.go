package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/store"
)

// maxOmittedNamed bounds the ids a refusal of a censoring proposal names
// (each 64 hex digits; a refusal's text is at most wire.MaxErrorText).
const maxOmittedNamed = 8

// omittedHeld returns, sorted, the ids requested in round x that this
// server holds and that the proposal rl leaves out although the cut rule
// keeps them (§5.3 v3: the round-robin cut of internal/proto/listcut.go over the ids any
// server holds). An honest holder of such an id refuses to sign: the
// leader would otherwise censor a request by leaving it out. It runs the
// cut over the proposal's ids and its own held ones: ids the full cut
// never takes do not change it, so an honest proposal comes out again and
// any id of this server's that comes out besides is one left out. Call
// without s.mu; x.requests and x.reqByPos are final once x.pubDone.
func (s *Server) omittedHeld(e *sepoch, r uint32, x *sround, rl *wire.RoundList, maxRows int) ([][32]byte, error) {
	in := make(map[[32]byte]bool, len(rl.Entries))
	for _, le := range rl.Entries {
		in[le.ID] = true
	}
	s.mu.Lock()
	var missing [][32]byte
	for id := range x.requests {
		if !in[id] {
			missing = append(missing, id)
		}
	}
	byPos := x.reqByPos
	s.mu.Unlock()
	if len(missing) == 0 {
		return nil, nil
	}
	sort.Slice(missing, func(i, j int) bool { return bytes.Compare(missing[i][:], missing[j][:]) < 0 })
	held, err := s.store.Held(missing)
	if err != nil {
		return nil, fmt.Errorf("node: proposal: %w", err)
	}
	if len(held) == 0 {
		return nil, nil
	}
	mine := make(map[[32]byte]bool, len(held))
	for _, h := range held {
		mine[h.ID] = true
	}
	keep := proto.RoundRobinCut(proto.ListStart(e.final.ID, r, len(byPos)), byPos, func(id [32]byte) bool { return in[id] || mine[id] }, maxRows)
	var out [][32]byte
	for _, id := range keep {
		if !in[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// omitError is the refusal of a censoring proposal; it names the first
// omitted ids so that an honest leader that lacked them can fetch them.
func omitError(ids [][32]byte) error {
	var names []string
	for _, id := range ids[:min(len(ids), maxOmittedNamed)] {
		names = append(names, hex.EncodeToString(id[:]))
	}
	return fmt.Errorf("node: proposal omits %d requested ids held here: %s", len(ids), strings.Join(names, " "))
}

var omittedIDs = regexp.MustCompile(`omits \d+ requested ids held here: ([0-9a-f ]+)`)

// refusedOmitted returns the ids a refusal of omitError names.
func refusedOmitted(err error) [][32]byte {
	if err == nil {
		return nil
	}
	m := omittedIDs.FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	var out [][32]byte
	for _, f := range strings.Fields(m[1]) {
		var id [32]byte
		if b, err := hex.DecodeString(f); err == nil && len(b) == 32 {
			copy(id[:], b)
			out = append(out, id)
		}
	}
	return out
}

// fetchOmitted is the leader's answer to a refusal for omitted ids: it
// fetches each from the other servers of the chain (chunks are public and
// self-verifying) so that its next proposal holds them. It reports whether
// it got any.
func (s *Server) fetchOmitted(ctx context.Context, e *sepoch, ids [][32]byte) bool {
	got := false
	for _, id := range ids {
		for _, p := range e.final.Chain {
			if p == s.h.ID() {
				continue
			}
			rep, err := transport.Call(ctx, s.h, p, transport.Request{Proto: ProtoRound, Type: wire.TypeGetChunk, Body: (&wire.Chunk{ID: id}).Marshal(), Timeout: transport.BulkTimeout})
			if err != nil {
				continue
			}
			var c wire.Chunk
			if err := c.Unmarshal(rep, MaxChunkSize); err != nil || c.ID != id || sha256.Sum256(c.Data) != id {
				continue
			}
			if err := s.store.PutChunks([]store.Chunk{{ID: id, Data: c.Data}}); err == nil {
				got = true
				break
			}
		}
	}
	return got
}
