//go:build riffletest

package hooks

import (
	"crypto/ed25519"
	"encoding/binary"
	"io"
	"sync"
	"sync/atomic"

	"github.com/riffle-net/riffle/internal/group"
	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
)

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
	// Silent may make the client send no onion of round r in slot slot,
	// staying connected (a dry slot).
	Silent func(epoch [32]byte, r, slot uint32) bool
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

// Config is what a test sets in a client's config (ClientConfig's
// ClientHookCfg).
type Config struct {
	// Observe is the anonymity tests' ground truth.
	Observe *ClientObserver
	// JobEpochs, if set, replaces JobEpochs (J) for this client: the
	// tests' short runs.
	JobEpochs int
	DupTest   *DupClientTest
}

// Hooks is a client's hook points and what they keep.
type Hooks struct {
	Config Config
	// Misbehave is set by a test on a running client.
	Misbehave atomic.Pointer[ClientHooks]

	mu sync.Mutex
	// held: the chunks this client published or fetched, for the
	// negative control of the anonymity tests (heldDraw).
	held [][32]byte
	// local is called by the local worker before each step (Local).
	local func(step string)
	// own is the old decoy rule, the controls' (own_riffletest.go).
	own ownRule
}

func Joined(h *Hooks, epoch [32]byte, slot uint32, cs *mix.ClientSecret) {
	if o := h.Config.Observe; o != nil && o.Joined != nil {
		o.Joined(epoch, slot, cs.Pseudonym().Bytes())
	}
}

func Row(h *Hooks, epoch [32]byte, r uint32, t, row, L int) {
	if o := h.Config.Observe; o != nil && o.Row != nil {
		o.Row(epoch, r, t, row, L)
	}
}

func Requested(h *Hooks, epoch [32]byte, r uint32, reqs [][32]byte) {
	if o := h.Config.Observe; o != nil && o.Requested != nil {
		o.Requested(epoch, r, append([][32]byte(nil), reqs...))
	}
}

func ResendAtOnce(h *Hooks) bool {
	return h.Config.Observe != nil && h.Config.Observe.ResendAtOnce
}

func CoverHandover(h *Hooks) bool {
	return h.Config.Observe != nil && h.Config.Observe.CoverHandover
}

func RetryCorrupted(h *Hooks) bool {
	return h.Config.Observe != nil && h.Config.Observe.RetryCorrupted
}

func NoManifestCap(h *Hooks) bool {
	return h.Config.Observe != nil && h.Config.Observe.NoManifestCap
}

func NoGapFill(h *Hooks) bool { return h.Config.Observe != nil && h.Config.Observe.NoGapFill }

func (h *Hooks) noClosingFill() bool {
	return h.Config.Observe != nil && h.Config.Observe.NoClosingFill
}

// HeldDraw is the decoy draw of a control: heldDraw, from held chunks
// (ClientObserver.HeldDecoys), or the client's own lists (OwnDecoys);
// else nil.
func HeldDraw(h *Hooks) func(io.Reader) ([32]byte, bool) {
	if o := h.Config.Observe; o != nil && o.HeldDecoys {
		return h.heldDraw
	}
	return h.ownDraw()
}

// heldDraw is the decoy draw of v2, kept for the anonymity tests' negative
// control only: the coin of ρ, then a chunk the client published or
// fetched.
func (h *Hooks) heldDraw(rnd io.Reader) ([32]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b [8]byte
	if _, err := io.ReadFull(rnd, b[:]); err != nil || binary.BigEndian.Uint64(b[:])%proto.DecoyRateDen >= proto.DecoyRateNum || len(h.held) == 0 {
		return [32]byte{}, false
	}
	if _, err := io.ReadFull(rnd, b[:]); err != nil {
		return [32]byte{}, false
	}
	return h.held[binary.BigEndian.Uint64(b[:])%uint64(len(h.held))], true
}

// NoteHeld records a chunk for heldDraw.
func NoteHeld(h *Hooks, id [32]byte) {
	if o := h.Config.Observe; o != nil && o.HeldDecoys {
		h.mu.Lock()
		h.held = append(h.held, id)
		h.mu.Unlock()
	}
}

func JobEpochs(h *Hooks) int { return h.Config.JobEpochs }

// SetLocal sets the function Local calls.
func SetLocal(h *Hooks, f func(step string)) {
	h.mu.Lock()
	h.local = f
	h.mu.Unlock()
}

// Local calls the test's local hook, if set, with a step of local work:
// "manifest" (a root manifest opens an assembler, which verifies a resumed
// file), "chunk" (one chunk written) or "finish" (the file decrypted,
// written and synced).
func Local(h *Hooks, step string) {
	h.mu.Lock()
	f := h.local
	h.mu.Unlock()
	if f != nil {
		f(step)
	}
}

func RegKey(h *Hooks) ed25519.PrivateKey {
	if d := h.Config.DupTest; d != nil && d.RegKey != nil {
		return d.RegKey()
	}
	return nil
}

func Register(h *Hooks, epoch [32]byte, serverKeys []*group.Element, regKey ed25519.PublicKey, cs *mix.ClientSecret, reg *mix.Registration) {
	if d := h.Config.DupTest; d != nil && d.Register != nil {
		d.Register(epoch, serverKeys, regKey, cs, reg)
	}
}

// DupAnswers reports whether the client answers a duplicate abort,
// holds telling whether the named value is its own.
func DupAnswers(h *Hooks, holds bool) bool {
	mode := DupHonest
	if h.Config.DupTest != nil {
		mode = h.Config.DupTest.Answer
	}
	return mode != DupSilent && (holds || mode == DupForge)
}

func Payload(h *Hooks, epoch [32]byte, r, slot uint32, raw []byte) {
	if m := h.Misbehave.Load(); m != nil && m.Payload != nil {
		m.Payload(epoch, r, slot, raw)
	}
}

func LayerKeys(h *Hooks, epoch [32]byte, r, slot uint32, keys []mix.LayerKey) {
	if m := h.Misbehave.Load(); m != nil && m.LayerKeys != nil {
		m.LayerKeys(epoch, r, slot, keys)
	}
}

func Onion(h *Hooks, epoch [32]byte, r, slot uint32, onion []byte) {
	if m := h.Misbehave.Load(); m != nil && m.Onion != nil {
		m.Onion(epoch, r, slot, onion)
	}
}

// Silent reports whether the client sends nothing for round r.
func Silent(h *Hooks, epoch [32]byte, r, slot uint32) bool {
	m := h.Misbehave.Load()
	return m != nil && m.Silent != nil && m.Silent(epoch, r, slot)
}

// SecondOnion, after submission sub went out, may return a second,
// different onion signed with regKey for the same round and slot, for the
// client to send; nil: none.
func SecondOnion(h *Hooks, sub *wire.Submit, regKey ed25519.PrivateKey) *wire.Submit {
	m := h.Misbehave.Load()
	if m == nil || m.SecondOnion == nil || !m.SecondOnion(sub.Epoch, sub.Round, sub.Slot) {
		return nil
	}
	o := *sub
	o.Onion = append([]byte(nil), sub.Onion...)
	o.Onion[0] ^= 1
	copy(o.Sig[:], mix.SignSubmission(regKey, mix.EpochID(sub.Epoch), uint64(o.Round), o.Slot, o.Onion))
	return &o
}

// OwnRule reports whether the tests' control of the old decoy rule (the
// client's own lists, OwnDecoys) is on.
func OwnRule(h *Hooks) bool {
	o := h.Config.Observe
	return o != nil && o.OwnDecoys
}

// UnpinnedWindow reports whether the tests' control of the window
// before it was pinned by the Prepare is on (UnpinnedWindow).
func UnpinnedWindow(h *Hooks) bool {
	o := h.Config.Observe
	return o != nil && o.UnpinnedWindow
}

// Window tells the observer which epochs the client's window for v holds
// (epochs returns them, newest first).
func Window(h *Hooks, v *proto.View, epochs func() []*proto.PoolEpoch) {
	o := h.Config.Observe
	if o == nil || (o.Window == nil && o.WindowAt == nil) {
		return
	}
	eps := epochs()
	ids := make([][32]byte, len(eps))
	nums := make([]uint64, len(eps))
	for i, e := range eps {
		ids[i], nums[i] = e.ID, e.Number
	}
	if o.Window != nil {
		o.Window(v.ID, ids)
	}
	if o.WindowAt != nil {
		o.WindowAt(v.Desc.Number, nums)
	}
}

// StartCheck tells the observer the epochs whose manifest ids the check
// at epoch n's start covered.
func StartCheck(h *Hooks, n uint64, eps []*proto.PoolEpoch) {
	o := h.Config.Observe
	if o == nil || o.StartCheck == nil {
		return
	}
	nums := make([]uint64, 0, len(eps))
	for _, e := range eps {
		nums = append(nums, e.Number)
	}
	o.StartCheck(n, nums)
}

// NoPrevCheck reports whether the check at an epoch's start leaves the
// epoch before out (the rule before, a test's control).
func NoPrevCheck(h *Hooks) bool { return h.Config.Observe != nil && h.Config.Observe.NoPrevCheck }

// ClientObserver is what the anonymity tests learn from a client: the
// ground truth the adversary tries to guess (never given to it) and what
// a global observer of the client's link sees.
type ClientObserver struct {
	// Joined: the client's slot and its pseudonym (encoded) in an epoch.
	Joined func(epoch [32]byte, slot uint32, pseudonym []byte)
	// Row: the row the client's query for (round, t) asked for, of L.
	Row func(epoch [32]byte, r uint32, t, row, L int)
	// Requested: the ids the client's jobs request in round r (decoys
	// not included), in request slot order.
	Requested func(epoch [32]byte, r uint32, ids [][32]byte)
	// ResendAtOnce breaks §5.2 (v3) on purpose, for the positive
	// control of the void-after-leaving adversary: a chunk and the
	// requests of a void round go out again in the next onion sealed,
	// not resendHold rounds after the list (the rule before).
	ResendAtOnce bool
	// CoverHandover breaks §5.4 (v3) on purpose, for the positive
	// control of the leaving adversary: the onions a leaving client hands
	// over are cover with decoys only (the rule before), so its
	// pseudonym's uploads and job requests stop at the departure.
	CoverHandover bool
	// NoManifestCap breaks §6.4 (v3) on purpose, for the test of the
	// servers' caps: the client sends all its manifests at once.
	NoManifestCap bool
	// HeldDecoys breaks §6.3 (v3) on purpose, for the negative control
	// of the cross-epoch adversary: decoys are drawn, at the same rate,
	// from the chunks the client published or fetched (what v2 did).
	HeldDecoys bool
	// RetryCorrupted breaks §6.3 on purpose, for the positive control of
	// the active adversary that spoils answers: a chunk whose answer was
	// corrupted is asked for again in the next epoch, as a naive client
	// would.
	RetryCorrupted bool
	// NoGapFill breaks §7 (v3) on purpose, for the positive control of
	// the active adversary that leaves a manifest out of one client's
	// index: the client takes its primary's copy as whole and completes
	// it from no other server.
	NoGapFill bool
	// NoClosingFill breaks §7 (v3) on purpose, for the positive control
	// of the active adversary that withholds closing records from one
	// client: the client asks no other server for a record its primary
	// lacks.
	NoClosingFill bool
	// OwnDecoys breaks §6.3 (v3) on purpose, for the positive controls of
	// the late-record, newcomer and restart adversaries: decoys come from
	// the lists this client received itself, of the epochs it attended,
	// admitted as their closing records reach it (the rule before the
	// group's window), and no window is fetched.
	OwnDecoys bool
	// UnpinnedWindow breaks §6.3 (v3) on purpose, for the positive
	// control of the targeted sit-out: the window is the last 4 epochs
	// of the walk whose record and pool some server gave, not the epochs
	// the descriptor pins, and the client takes part with whatever it got
	// (the rule before the certified window).
	UnpinnedWindow bool
	// Window: the epochs of the window the client holds for an epoch,
	// newest first, once it holds it; WindowAt: the same by number.
	Window   func(epoch [32]byte, window [][32]byte)
	WindowAt func(n uint64, window []uint64)
	// StartCheck: the epochs whose manifest ids the check at epoch n's
	// start covered (the window's and the one before).
	StartCheck func(n uint64, epochs []uint64)
	// NoPrevCheck breaks §6.4 (v3) on purpose, for the control of the
	// newcomer's check: the check at an epoch's start covers the window
	// alone, not the epoch before (the rule before).
	NoPrevCheck bool
}
