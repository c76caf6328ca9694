package node

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/roundstep"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/store"
)

// maxOmittedNamed bounds the ids a refusal of a censoring proposal names
// (each 64 hex digits; a refusal's text is at most wire.MaxErrorText).
const maxOmittedNamed = 8

// omittedHeld returns the ids requested in round r that this server
// holds and that the proposal rl leaves out although the cut rule keeps
// them (§5.3 v3, roundstep.Omitted). An honest holder of such an id
// refuses to sign: the leader would otherwise censor a request by leaving
// it out. The driver of roundstep.Unlisted and Omitted: it asks the store
// which of the unlisted ids are held here.
func (s *Server) omittedHeld(ep roundstep.Facts, r uint32, p roundstep.Published, rl *wire.RoundList, maxRows int) ([][32]byte, error) {
	missing := roundstep.Unlisted(p, rl)
	if len(missing) == 0 {
		return nil, nil
	}
	held, err := s.store.Held(missing)
	if err != nil {
		return nil, fmt.Errorf("node: proposal: %w", err)
	}
	mine := make(map[[32]byte]bool, len(held))
	for _, h := range held {
		mine[h.ID] = true
	}
	return roundstep.Omitted(ep, r, p, rl, mine, maxRows), nil
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
