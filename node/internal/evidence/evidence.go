// Package evidence is a server's side of the signed evidence of aborts
// and charges (docs/protocol.md §3, "Charges from evidence" and "The
// refusal budget"; §8, the delivery of a blame's evidence): an epoch's
// aborts signed, checked, relayed once and charged, those for a missing
// publication or list held until the final descriptor, evidence logged
// and spread to the chain, evidence from outside an epoch's chain judged
// against its number's certificate, a leader's budget evidence handed to
// its chain, a named client's long-term key evidence published, checked
// and applied, and delivery to every chain server with back-off.
//
//   - evidence.go: Ep, Host, Config, Service.
//   - aborts.go: an abort signed (SignAbort), checked (CheckAbort), sent
//     after the settle, taken and noted (Take, Note), relayed.
//   - prefinal.go: the aborts held for the final descriptor (PreFinal).
//   - down.go: the aborts of a server down and their attestations
//     (Down, GatherDown, AttestDown).
//   - charges.go: evidence logged and spread (NoteCharge), taken from a
//     server (OnCharge, OnAbort), the budget's evidence handed on.
//   - keys.go: a named client's long-term key evidence published,
//     checked and applied (ClientNamed, OnKeyEvidence).
//   - deliver.go: delivery with back-off (DeliverAll, SendToChain).
//
// The log itself, the counts and the aborts seen are package chargelog's
// (its own lock). What an epoch holds (its descriptors, its end, its
// rounds' attestations) is the server's, under its lock (Host.Locked):
// package node's evidenceHost.
package evidence

import (
	"context"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/chargelog"
	"github.com/riffle-net/riffle/node/internal/ltkeys"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Ep is an epoch as the evidence sees it, read under the server's lock:
// its open and final descriptors (Final nil before), the aborts held for
// the final one, its servers down, its client slots named here, and the
// server's own epoch (Ref, for Host).
type Ep struct {
	V, Final *proto.View
	PreFinal *PreFinal
	Down     *Down
	KeyNamed *blame.KeyNamed
	Ref      any
}

// Host is what the evidence asks of its server.
type Host interface {
	// Locked runs f under the server's lock.
	Locked(f func())
	// Each sends r to every server of chain at once and returns their
	// replies in order; NotifyAll sends a message of type t to the
	// servers to in the background.
	Each(ctx context.Context, chain []peer.ID, r transport.Request) ([][]byte, error)
	NotifyAll(to []peer.ID, t wire.Type, body []byte)
	// Call asks peer p.
	Call(ctx context.Context, p peer.ID, r transport.Request) ([]byte, error)
	// Go runs f as one of the server's goroutines.
	Go(f func())
	// InRoster: p is a roster server here; GroupPeer: a server of the
	// group; LastSeen: when p's last hello came, if p is known here;
	// Number: the highest number signed here (takes the lock).
	InRoster(p peer.ID) bool
	GroupPeer(p peer.ID) bool
	LastSeen(p peer.ID) (time.Time, bool)
	Number() uint64
	// AskAttests gathers the attestations of kind and round from the
	// other servers of ep's chain but skip (without the lock).
	AskAttests(ep *Ep, kind uint8, round uint32, skip peer.ID) []wire.Attest

	// FinalEpoch is the epoch of id held here, once its final
	// descriptor is (takes the lock).
	FinalEpoch(id [32]byte) (*Ep, error)

	// Under the lock: OwnKeyEvidence is the long-term key evidence this
	// server holds as slot's primary, or nil; Epoch is the epoch of id
	// held here, or nil; Now
	// is ep as it is now (its final descriptor may have come since);
	// EndQuiet ends it without telling anyone; EndOf is whether it
	// ended here, when, and which chain positions were live then;
	// SignAttest is this server's signed attestation of kind, round and
	// lacking bits; PubAttest is its attestation of round r's parts if
	// it attests the round, or nil; CertifyAbort certifies an opened
	// epoch's abort before its final descriptor; Voided: round r is
	// void by a blame here; AdmitAttest is this server's attestation of
	// round r if the round is admitted here, or nil.
	OwnKeyEvidence(ep *Ep, slot int) *wire.KeyEvidence
	Epoch(id [32]byte) *Ep
	Now(ep *Ep) *Ep
	EndQuiet(ep *Ep, reason string)
	EndOf(ep *Ep) (ended bool, at time.Time, liveAtEnd uint64)
	SignAttest(ep *Ep, kind uint8, round uint32, lacking uint64) *wire.Attest
	PubAttest(ep *Ep, r uint32) *wire.Attest
	CertifyAbort(ep *Ep, a *wire.Abort)
	Voided(ep *Ep, r uint32) bool
	AdmitAttest(ep *Ep, r uint32) *wire.Attest
}

// Hooks are the tests' hook points (Config.Hooks).
type Hooks interface {
	// SpreadLate delays this server's spreading of evidence;
	// RefuseEvidence: this server refuses a delivery of evidence of type
	// t (a lost delivery, to be retried).
	SpreadLate() time.Duration
	RefuseEvidence(t wire.Type) bool
}

// Config is what the evidence takes of its server as values.
type Config struct {
	Ctx  context.Context // the server's life
	Self peer.ID
	Priv crypto.PrivKey
	Log  *slog.Logger
	// Ref is the server's evidence log, Certs its certificates, Keys
	// its long-term key records.
	Ref   *chargelog.Log
	Certs *certs.Certs
	Keys  *ltkeys.Keys
	// AbortSettle is how long a server that ended an epoch waits before
	// it signs its abort (Tunables.AbortSettle); Probe how long a lost
	// server has to answer a hello (Tunables.ServerProbe); Backoff and
	// BackoffMax space a delivery's attempts (Tunables.EvidenceBackoff,
	// EvidenceBackoffMax).
	AbortSettle, Probe, Backoff, BackoffMax time.Duration
	// Hooks are the tests' hook points, nil in the binary: every call
	// sits behind hooksBuilt (TestBinaryHasNoTestHooks).
	Hooks Hooks
}

// Service is one server's evidence.
type Service struct {
	Config
	h Host
}

// New is the evidence of the server h, with cfg.
func New(cfg Config, h Host) *Service { return &Service{Config: cfg, h: h} }

func (s *Service) hooked() bool { return hooksBuilt && s.Hooks != nil }

// ack is the body of an acknowledgement.
var ack = []byte{}

// others is chain less self and skip.
func others(chain []peer.ID, self peer.ID, skip ...peer.ID) []peer.ID {
	var to []peer.ID
next:
	for _, p := range chain {
		if p == self {
			continue
		}
		for _, q := range skip {
			if p == q {
				continue next
			}
		}
		to = append(to, p)
	}
	return to
}
