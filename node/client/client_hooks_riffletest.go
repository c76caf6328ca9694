//go:build riffletest

package client

import (
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"io"
	"sync/atomic"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// The client's hook points of the tests (hooks_riffletest.go has the
// server's and the hooks' state).

// ClientHooks let a test make a client misbehave.
type ClientHooks struct {
	// LayerKeys may alter the layer keys of the client's onion of round r
	// in slot slot of the epoch before sealing.
	LayerKeys func(epoch [32]byte, r, slot uint32, keys []mix.LayerKey)
	// SecondOnion may make the client sign and send a second, different
	// onion for round r of the epoch in slot slot.
	SecondOnion func(epoch [32]byte, r, slot uint32) bool
	// Payload may alter the client's encoded payload of round r before
	// sealing (a payload whose pseudonym signature fails).
	Payload func(epoch [32]byte, r, slot uint32, raw []byte)
	// Onion may read or overwrite, in place, the client's sealed onion of
	// round r before it is signed (a replay of another client's onion).
	Onion func(epoch [32]byte, r, slot uint32, onion []byte)
}

func (c *Client) hookJoined(epoch [32]byte, slot uint32, cs *mix.ClientSecret) {
	if o := c.cfg.Observe; o != nil && o.Joined != nil {
		o.Joined(epoch, slot, cs.Pseudonym().Bytes())
	}
}

func (c *Client) hookRow(epoch [32]byte, r uint32, t, row, L int) {
	if o := c.cfg.Observe; o != nil && o.Row != nil {
		o.Row(epoch, r, t, row, L)
	}
}

func (c *Client) hookRequested(epoch [32]byte, r uint32, reqs [][32]byte) {
	if o := c.cfg.Observe; o != nil && o.Requested != nil {
		o.Requested(epoch, r, append([][32]byte(nil), reqs...))
	}
}

func (c *Client) hookResendAtOnce() bool {
	return c.cfg.Observe != nil && c.cfg.Observe.ResendAtOnce
}

func (c *Client) hookRetryCorrupted() bool {
	return c.cfg.Observe != nil && c.cfg.Observe.RetryCorrupted
}

func (c *Client) hookNoManifestCap() bool {
	return c.cfg.Observe != nil && c.cfg.Observe.NoManifestCap
}

func (c *Client) hookNoGapFill() bool { return c.cfg.Observe != nil && c.cfg.Observe.NoGapFill }

func (c *Client) hookNoClosingFill() bool {
	return c.cfg.Observe != nil && c.cfg.Observe.NoClosingFill
}

// hookHeldDraw is the decoy draw of a control: heldDraw, from held chunks
// (ClientObserver.HeldDecoys), or the client's own lists
// (OwnDecoys); else nil.
func (c *Client) hookHeldDraw() func(io.Reader) ([32]byte, bool) {
	if o := c.cfg.Observe; o != nil && o.HeldDecoys {
		return c.heldDraw
	}
	return c.ownDraw()
}

// heldDraw is the decoy draw of v2, kept for the anonymity tests' negative
// control only: the coin of ρ, then a chunk the client published or
// fetched. Call with c.mu held.
func (c *Client) heldDraw(rnd io.Reader) ([32]byte, bool) {
	var b [8]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil || binary.BigEndian.Uint64(b[:])%proto.DecoyRateDen >= proto.DecoyRateNum || len(c.testHeld) == 0 {
		return [32]byte{}, false
	}
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return [32]byte{}, false
	}
	return c.testHeld[binary.BigEndian.Uint64(b[:])%uint64(len(c.testHeld))], true
}

// hookNoteHeld records a chunk for heldDraw; call with c.mu held.
func (c *Client) hookNoteHeld(id [32]byte) {
	if o := c.cfg.Observe; o != nil && o.HeldDecoys {
		c.testHeld = append(c.testHeld, id)
	}
}

func (c *Client) hookJobEpochs() int { return c.cfg.JobEpochs }

// hookLocal calls the test's localHook, if set, with a step of local work:
// "manifest" (a root manifest opens an assembler, which verifies a resumed
// file), "chunk" (one chunk written) or "finish" (the file decrypted,
// written and synced).
func (c *Client) hookLocal(step string) {
	c.mu.Lock()
	h := c.localHook
	c.mu.Unlock()
	if h != nil {
		h(step)
	}
}

// DupClientTest are hooks of a client for the duplicate-share tests
// (dupexport_test.go sets them): register may change the registration
// before it is sent (to model a client that registers a copy of another's
// value); answer chooses how the client answers a duplicate-share abort.
type DupClientTest struct {
	Register func(epoch [32]byte, serverKeys []*group.Element, regKey ed25519.PublicKey, cs *mix.ClientSecret, reg *mix.Registration)
	Answer   DupAnswer
	RegKey   func() ed25519.PrivateKey // a chosen registration key (slot order)
}

type DupAnswer int

const (
	DupHonest DupAnswer = iota // prove only a value this client holds
	DupSilent                  // never answer
	DupForge                   // answer every abort naming the slot, with a proof of its own value
)

func (c *Client) hookRegKey() ed25519.PrivateKey {
	if h := c.cfg.DupTest; h != nil && h.RegKey != nil {
		return h.RegKey()
	}
	return nil
}

func (c *Client) hookRegister(epoch [32]byte, serverKeys []*group.Element, regKey ed25519.PublicKey, cs *mix.ClientSecret, reg *mix.Registration) {
	if h := c.cfg.DupTest; h != nil && h.Register != nil {
		h.Register(epoch, serverKeys, regKey, cs, reg)
	}
}

// hookDupAnswers reports whether the client answers a duplicate abort,
// holds telling whether the named value is its own.
func (c *Client) hookDupAnswers(holds bool) bool {
	mode := DupHonest
	if c.cfg.DupTest != nil {
		mode = c.cfg.DupTest.Answer
	}
	return mode != DupSilent && (holds || mode == DupForge)
}

func (c *Client) hookPayload(epoch [32]byte, r, slot uint32, raw []byte) {
	if h := c.Hooks.Load(); h != nil && h.Payload != nil {
		h.Payload(epoch, r, slot, raw)
	}
}

func (c *Client) hookLayerKeys(epoch [32]byte, r, slot uint32, keys []mix.LayerKey) {
	if h := c.Hooks.Load(); h != nil && h.LayerKeys != nil {
		h.LayerKeys(epoch, r, slot, keys)
	}
}

func (c *Client) hookOnion(epoch [32]byte, r, slot uint32, onion []byte) {
	if h := c.Hooks.Load(); h != nil && h.Onion != nil {
		h.Onion(epoch, r, slot, onion)
	}
}

// hookSecondOnion, after a submission went out, may send a second,
// different onion signed for the same round and slot.
func (c *Client) hookSecondOnion(ctx context.Context, e *cepoch, sub *wire.Submit) {
	h := c.Hooks.Load()
	if h == nil || h.SecondOnion == nil || !h.SecondOnion(e.v.ID, sub.Round, e.slot) {
		return
	}
	o := *sub
	o.Onion = append([]byte(nil), sub.Onion...)
	o.Onion[0] ^= 1
	copy(o.Sig[:], mix.SignSubmission(e.regKey, mix.EpochID(e.v.ID), uint64(o.Round), o.Slot, o.Onion))
	_, _ = c.call(ctx, transport.Request{Proto: transport.ProtoClient, Type: wire.TypeSubmit, Segments: o.Segments(), Timeout: transport.BulkTimeout})
}

// hookOwnRule reports whether the tests' control of the old decoy rule (the
// client's own lists, OwnDecoys) is on.
func (c *Client) hookOwnRule() bool { return c.useOwnRule() }

// hookUnpinnedWindow reports whether the tests' control of the window
// before it was pinned by the Prepare is on (UnpinnedWindow).
func (c *Client) hookUnpinnedWindow() bool {
	o := c.cfg.Observe
	return o != nil && o.UnpinnedWindow
}

// hookWindow tells the observer which epochs the client's window holds.
func (c *Client) hookWindow(v *proto.View) {
	o := c.cfg.Observe
	if o == nil || (o.Window == nil && o.WindowAt == nil) {
		return
	}
	c.mu.Lock()
	ids := make([][32]byte, len(c.decoys.epochs))
	nums := make([]uint64, len(c.decoys.epochs))
	for i, e := range c.decoys.epochs {
		ids[i], nums[i] = e.ID, e.Number
	}
	c.mu.Unlock()
	if o.Window != nil {
		o.Window(v.ID, ids)
	}
	if o.WindowAt != nil {
		o.WindowAt(v.Desc.Number, nums)
	}
}

// ClientHookCfg is what a test sets in a ClientConfig (riffletest
// builds only; empty in the binary, client_hooks.go).
type ClientHookCfg struct {
	// Observe is the anonymity tests' ground truth (observe.go).
	Observe *ClientObserver
	// JobEpochs, if set, replaces JobEpochs (J) for this client: the
	// tests' short runs.
	JobEpochs int
	DupTest   *DupClientTest
}

// clientHookState: hooks are set by a test on a running client.
type clientHookState struct {
	Hooks atomic.Pointer[ClientHooks]
	// testHeld: the chunks this client published or fetched, for the
	// negative control of the anonymity tests (heldDraw).
	testHeld [][32]byte
	// localHook is called by the local worker before each step (guarded
	// by c.mu; hookLocal).
	localHook func(step string)
	// own is the old decoy rule, the controls' (decoys_own_riffletest.go).
	own ownRule
}
