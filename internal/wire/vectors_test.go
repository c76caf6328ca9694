package wire

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.txt from the vector table")

// vectorFile holds one frame per message type; docs/ cite it.
const vectorFile = "testdata/vectors.txt"

// vector is one message type with a deterministic instance.
type vector struct {
	name string
	t    Type
	msg  Body
}

// dec decodes a body of the vector's type with the table's decoder (every
// row of the type: TestTableDecoders checks that they agree).
func (v vector) dec(body []byte) (Body, error) {
	for _, m := range Messages {
		if m.Type == v.t {
			return m.Decode(body, testLimits)
		}
	}
	return nil, fmt.Errorf("type %d is not in the message table", v.t)
}

// k32 and k64 are arrays whose bytes count up from x, so that a field
// written in the wrong place shows in the vector.
func k32(x byte) (a [32]byte) {
	for i := range a {
		a[i] = x + byte(i)
	}
	return a
}

func k64(x byte) (a [64]byte) {
	for i := range a {
		a[i] = x + byte(i)
	}
	return a
}

func vectorParams() Params {
	return Params{ChunkSize: 64, K: 2, W: 2, Rounds: 2, MaxClients: 16, MaxRows: 32, RegWindowMs: 1000, RoundLimitMs: 5000, RoundIntervalMs: 250}
}

func vectorEntry(x byte) GroupEntry {
	return GroupEntry{PeerID: []byte{0, 0x24, x}, Nick: []byte("s"), Addrs: [][]byte{{4, 127, 0, 0, 1, 6, 0x10, x}},
		X: k32(x), PoK: []byte{x, x + 1, x + 2}, D: k32(x + 0x40), Y: [][32]byte{k32(x + 1), k32(x + 2)}, Yp: [][32]byte{k32(x + 3), k32(x + 4)}, Commit: k32(x + 5)}
}

// vectorCert is a certificate of number 6 of each kind (signatures are
// arbitrary bytes: the codec does not verify them).
func vectorCert(kind uint8) Cert {
	c := Cert{Kind: kind, Number: 6, Chain: [][]byte{{0, 0x24, 0x10}, {0, 0x24, 0x20}, {0, 0x24, 0x30}},
		Sigs: []CertSig{{0, k64(0x40)}, {1, k64(0x41)}, {2, k64(0x42)}}, Abort: []byte{}}
	switch kind {
	case CertFinal:
		c.Epoch, c.Digest = k32(0x50), k32(0x60)
	case CertAbort:
		c.Epoch = k32(0x50)
		a := Abort{Epoch: k32(0x50), Number: 6, Kind: AbortCoord, Signer: []byte{0, 0x24, 0x20}, Reason: []byte("open failed"), Sig: k64(0x70)}
		c.Abort = a.Marshal()
	case CertTimeout:
		c.Sigs = []CertSig{{0, k64(0x40)}, {2, k64(0x42)}}
	case CertNone:
		c = Cert{Chain: [][]byte{}, Sigs: []CertSig{}, Abort: []byte{}}
	}
	return c
}

func vectorDesc(final bool) Descriptor {
	d := Descriptor{Number: 7, Nonce: k32(0x90), Params: vectorParams(), Group: []GroupEntry{vectorEntry(0x10), vectorEntry(0x20)}, Previous: vectorCert(CertAbort), Window: vectorWindow(), Gap: []Cert{}, Clients: []ClientEntry{}, Reveals: [][32]byte{}}
	if final {
		d.Clients = []ClientEntry{{RegKey: k32(0xa0), Primary: 1, XKey: k32(0xb0), RegHash: k32(0xc0)}}
		d.Reveals = [][32]byte{k32(0xd0), k32(0xd1)}
	}
	return d
}

// vectorWindow is a certified window of two epochs (numbers 5 and 4).
func vectorWindow() []WindowRef {
	return []WindowRef{{Number: 5, Epoch: k32(0x80), Closing: k32(0x88)}, {Number: 4, Epoch: k32(0x81), Closing: k32(0x89)}}
}

// vectorGap carries a walk past number 6's timeout: number 5's final
// certificate.
func vectorGap() []Cert {
	c := vectorCert(CertFinal)
	c.Number = 5
	return []Cert{c}
}

func vectorSubmit(slot uint32) Submit {
	return Submit{Epoch: k32(1), Round: 1, Slot: slot, Onion: []byte{0xee, byte(slot)}, Sig: k64(0x50 + byte(slot))}
}

// vectors lists every message type of the table (and the Batch and the
// RoundList in each of their shapes).
func vectors() []vector {
	return []vector{
		{"hello", TypeHello, &Hello{Version: 1, Role: 1, Nick: []byte("alpha"), Addrs: [][]byte{{4, 127, 0, 0, 1}}, Peers: [][]byte{{4, 10, 0, 0, 2}, {4, 10, 0, 0, 3}}}},
		{"prepare", TypePrepare, &Prepare{Number: 7, Nonce: k32(0x90), Params: vectorParams(), Chain: [][]byte{{0, 0x24, 0x10}, {0, 0x24, 0x20}}, Previous: vectorCert(CertTimeout), Window: vectorWindow(), Gap: vectorGap(), Cands: [][]byte{{0, 0x24, 0x30}, {0, 0x24, 0x40}}}},
		{"entry", TypeEntry, func() *GroupEntry { g := vectorEntry(0x10); return &g }()},
		{"signreq", TypeSignReq, &Signed{Final: false, Desc: vectorDesc(false), Sigs: [][64]byte{}}},
		{"sig", TypeSig, &Sig{Index: 1, Sig: k64(0x30)}},
		{"signed", TypeSigned, &Signed{Final: true, Desc: vectorDesc(true), Sigs: [][64]byte{k64(0x30), k64(0x31)}}},
		{"closereq", TypeCloseReq, &EpochRef{Epoch: k32(1), Reason: []byte{}}},
		{"reglist", TypeRegList, &RegList{Epoch: k32(1), Reveal: k32(0xd0), Regs: []Forwarded{
			{Primary: 0, Reg: Register{Epoch: k32(1), RegKey: k32(0xa0), XKey: k32(0xb0), Reg: []byte("reg0"), Sig: k64(0x60)}, Sig: k64(0x68)},
			{Primary: 1, Reg: Register{Epoch: k32(1), RegKey: k32(0xa1), XKey: k32(0xb1), Reg: []byte("reg1"), Sig: k64(0x61)}, Sig: k64(0x69)}},
			Orders: []Order{{Epoch: k32(1), Primary: 0, Keys: [][32]byte{k32(0xa0), k32(0xa2)}, Sig: k64(0x6a)}, {Epoch: k32(1), Primary: 1, Keys: [][32]byte{k32(0xa1)}, Sig: k64(0x6b)}},
			Rest:   []Forwarded{{Primary: 0, Reg: Register{Epoch: k32(1), RegKey: k32(0xa2), XKey: k32(0xb2), Reg: []byte("reg2"), Sig: k64(0x62)}, Sig: k64(0x6c)}}}},
		{"route", TypeRoute, &Route{Epoch: k32(1), S: 1, Out: 2, In: 3, Proof: []byte{9, 9}}},
		{"step", TypeStep, &Step{Epoch: k32(1), S: 1, Result: []byte("step result"), Sig: k64(0x70)}},
		{"abort", TypeAbort, &Abort{Epoch: k32(1), Number: 9, Round: 3, Kind: AbortFault, Signer: []byte{0, 0x24, 0x10}, Reason: []byte("round 3 void"), Sig: k64(0x31)}},
		{"abort-noclose", TypeAbort, &Abort{Epoch: k32(1), Number: 9, Kind: AbortNoClose, Signer: []byte{0, 0x24, 0x20}, Reason: []byte("registration not closed"), Sig: k64(0x32)}},
		{"abort-nolist", TypeAbort, &Abort{Epoch: k32(1), Number: 9, Round: 6, Kind: AbortNoList, Signer: []byte{0, 0x24, 0x20}, Reason: []byte("round 6: no list"), Sig: k64(0x36)}},
		{"timeoutvote", TypeTimeoutVote, &Cert{Kind: CertTimeout, Number: 6, Chain: [][]byte{{0, 0x24, 0x10}, {0, 0x24, 0x20}, {0, 0x24, 0x30}},
			Sigs: []CertSig{{2, k64(0x42)}}, Abort: []byte{}}},
		{"certreq", TypeCertReq, &CertReq{From: 6}},
		{"certs", TypeCerts, &Certs{Certs: []Cert{vectorCert(CertFinal)}}},
		{"certpush", TypeCertPush, func() *Cert { c := vectorCert(CertFinal); c.Cands = [][]byte{{0, 0x24, 0x30}}; return &c }()},
		{"wouldserve", TypeWouldServe, &Prepare{Number: 7, Nonce: k32(0x90), Params: vectorParams(), Chain: [][]byte{{0, 0x24, 0x10}, {0, 0x24, 0x20}, {0, 0x24, 0x30}}, Previous: vectorCert(CertNone), Window: []WindowRef{}, Gap: []Cert{}}},
		{"waitopen", TypeWaitOpen, &EpochRef{Epoch: k32(2), Reason: []byte{}}},
		{"register", TypeRegister, &ClientRegister{Reg: Register{Epoch: k32(1), RegKey: k32(0xa0), XKey: k32(0xb0), Reg: []byte("reg0"), Sig: k64(0x60)},
			LTKey: k32(0xd0), LTSig: k64(0xe0)}},
		{"forward", TypeForward, &Forwarded{Primary: 1, Reg: Register{Epoch: k32(1), RegKey: k32(0xa0), XKey: k32(0xb0), Reg: []byte("reg0"), Sig: k64(0x60)},
			Sig: k64(0x68)}},
		{"badforward", TypeBadForward, &Forwarded{Primary: 0, Reg: Register{Epoch: k32(1), RegKey: k32(0xa1), XKey: k32(0xb1), Reg: []byte("bad"), Sig: k64(0x61)},
			Sig: k64(0x69)}},
		{"submit", TypeSubmit, func() *Submit { s := vectorSubmit(3); return &s }()},
		{"handover", TypeHandover, func() *Submit { s := vectorSubmit(5); s.Round = 40; return &s }()},
		{"submitbatch", TypeSubmitBatch, &SubmitBatch{Epoch: k32(1), Round: 1, Subs: []Submit{vectorSubmit(0), vectorSubmit(2)}}},
		{"batch", TypeBatch, &Batch{Epoch: k32(1), Round: 2, S: 1, Entries: [][]byte{{0xaa, 0xab}, {0xba, 0xbb}},
			ClientSigs: [][64]byte{k64(5), k64(6)}, ClientHashes: [][32]byte{k32(7), k32(8)}, Root: k32(9), Sig: k64(10)}},
		{"batch-zero-runs", TypeBatch, &Batch{Epoch: k32(1), Round: 2, S: 3, Entries: [][]byte{{0xaa, 0, 0, 0, 0xbb}, {0xcc}},
			Zeros: []ZeroRun{{At: 1, N: 3}, {}}, ClientSigs: [][64]byte{k64(5), k64(6)}, ClientHashes: [][32]byte{k32(7), k32(8)}, Root: k32(9), Sig: k64(10)}},
		{"badbatch", TypeBadBatch, &Batch{Epoch: k32(1), Round: 2, S: 1, Entries: [][]byte{{0xaa, 0xab}, {0xba}},
			ClientSigs: [][64]byte{k64(5), k64(6)}, ClientHashes: [][32]byte{k32(7), k32(8)}, Root: k32(9), Sig: k64(10)}},
		{"proposal", TypeProposal, &RoundList{Epoch: k32(1), Round: 2, Entries: []ListEntry{{ID: k32(0xd0), Len: 64}, {ID: k32(0xd1), Len: 5}}, Published: [][32]byte{k32(0xd1)}, Manifests: [][32]byte{}, Sigs: [][64]byte{k64(0x30)}}},
		{"roundlist", TypeRoundList, &RoundList{Epoch: k32(1), Round: 2, Entries: []ListEntry{{ID: k32(0xd0), Len: 64}, {ID: k32(0xd1), Len: 5}}, Published: [][32]byte{k32(0xd1)}, Manifests: [][32]byte{k32(0xd1)}, Pairs: []ListPair{{Pos: 0, Entry: 1}, {Pos: 2, Entry: 0}, {Pos: 2, Entry: 1}}, Sigs: [][64]byte{k64(0x30), k64(0x31)}}},
		{"roundlist-void", TypeRoundList, &RoundList{Epoch: k32(1), Round: 3, Entries: []ListEntry{}, Published: [][32]byte{}, Manifests: [][32]byte{}, Flags: ListVoid, Sigs: [][64]byte{k64(0x30), k64(0x31)}}},
		{"listsig", TypeListSig, &ListSig{Epoch: k32(1), Round: 2, Digest: k32(0xa4), Index: 1, Sig: k64(0x31)}},
		{"padanswers", TypePadAnswers, &Rows{Epoch: k32(1), Round: 2, Slots: []uint32{0, 5}, Rows: [][]byte{{1, 2}, {3, 4}, {5, 6}, {7, 8}}}},
		{"query", TypeQuery, &Rows{Epoch: k32(1), Round: 2, Slots: []uint32{5}, Rows: [][]byte{{0xf0}, {0x0f}}}},
		{"answer", TypeAnswer, &Rows{Epoch: k32(1), Round: 2, Slots: []uint32{5}, Rows: [][]byte{{1, 2, 3}, {4, 5, 6}}}},
		{"getchunk", TypeGetChunk, &Chunk{ID: k32(0xd0), Data: []byte{}}},
		{"chunk", TypeChunk, &Chunk{ID: k32(0xd0), Data: []byte("chunk data")}},
		{"waitlist", TypeWaitList, &EpochRef{Epoch: k32(1), Round: 4, Reason: []byte{}}},
		{"listreq", TypeListReq, &EpochRef{Epoch: k32(1), Round: 4, Reason: []byte{}}},
		{"getbatch", TypeGetBatch, &BatchRef{Epoch: k32(1), Round: 2, S: 1}},
		{"lack", TypeLack, &Attest{AttestReq: AttestReq{Epoch: k32(1), Number: 9, Kind: ClaimLack, Round: 2}, Lacking: 1, Signer: 1, Sig: k64(0x35)}},
		{"attestreq", TypeAttestReq, &AttestReq{Epoch: k32(1), Number: 9, Kind: AbortNoPub, Round: 3}},
		{"attestreq-nolist", TypeAttestReq, &AttestReq{Epoch: k32(1), Number: 9, Kind: AbortNoList, Round: 6}},
		{"attestreq-down", TypeAttestReq, &AttestReq{Epoch: k32(1), Number: 9, Kind: AbortDown, Round: 2}},
		{"attest", TypeAttest, &Attest{AttestReq: AttestReq{Epoch: k32(1), Number: 9, Kind: AbortNoPub, Round: 3}, Lacking: 2, Signer: 2, Sig: k64(0x33)}},
		{"charge", TypeCharge, &Charge{Kind: EvAbort, Number: 9, Item: []byte{1, 2, 3}, Attests: []Attest{{AttestReq: AttestReq{Epoch: k32(1), Number: 9, Kind: AbortNoPub, Round: 3}, Lacking: 4, Signer: 0, Sig: k64(0x34)}}}},
		{"charge-held", TypeCharge, &Charge{Kind: EvHeld, Number: 9, Item: HeldItem(&OnionReceipt{Epoch: k32(1), Round: 3, Slot: 2, Server: 1, Digest: k32(0x50), Sig: k64(0x60)}, &Dry{Epoch: k32(1), Round: 3, Slot: 2, Server: 1, Sig: k64(0x70)}), Attests: []Attest{}}},
		{"onionreceipt", TypeOnionReceipt, &OnionReceipt{Epoch: k32(1), Round: 3, Slot: 2, Server: 1, Digest: k32(0x50), Sig: k64(0x60)}},
		{"showreceipt", TypeShowReceipt, &OnionReceipt{Epoch: k32(1), Round: 4, Slot: 2, Server: 1, Digest: k32(0x51), Sig: k64(0x61)}},
		{"dryreq", TypeDryReq, &EpochRef{Epoch: k32(1), Round: 3, Reason: []byte{}}},
		{"dryset", TypeDrySet, &DrySet{Epoch: k32(1), Round: 3, Dries: []Dry{{Epoch: k32(1), Round: 3, Slot: 2, Server: 1, Sig: k64(0x70)}, {Epoch: k32(1), Round: 3, Slot: 5, Server: 1, Sig: k64(0x71)}}}},
		{"accountreq", TypeAccountReq, &EpochRef{Epoch: k32(1), Round: 3, Reason: []byte{}}},
		{"account", TypeAccount, &Account{Epoch: k32(1), Round: 3, Server: 1, Forwarded: true, Entries: []AccountEntry{{Slot: 2, Digest: k32(0x50)}, {Slot: 5, Digest: k32(0x52)}}, Sig: k64(0x72),
			Root: &ForwardRoot{Epoch: k32(1), Round: 3, Server: 1, Entries: []AccountEntry{{Slot: 2, Digest: k32(0x50)}, {Slot: 5, Digest: k32(0x52)}}, Sig: k64(0x74)}}},
		{"account-unforwarded", TypeAccount, &Account{Epoch: k32(1), Round: 4, Server: 1, Ended: true, Entries: []AccountEntry{{Slot: 2, Digest: k32(0x51)}}, Sig: k64(0x73)}},
		{"charge-account", TypeCharge, &Charge{Kind: EvAccount, Number: 9, Item: AccountItem(&OnionReceipt{Epoch: k32(1), Round: 4, Slot: 5, Server: 1, Digest: k32(0x52), Sig: k64(0x61)},
			&Account{Epoch: k32(1), Round: 4, Server: 1, Ended: true, Entries: []AccountEntry{{Slot: 2, Digest: k32(0x51)}}, Sig: k64(0x73)}), Attests: []Attest{}}},
		{"forwardroot", TypeForwardRoot, &ForwardRoot{Epoch: k32(1), Round: 3, Server: 1, Entries: []AccountEntry{{Slot: 2, Digest: k32(0x53)}, {Slot: 5, Digest: k32(0x52)}}, Sig: k64(0x74)}},
		{"charge-forward", TypeCharge, &Charge{Kind: EvForward, Number: 9, Item: ForwardItem(&OnionReceipt{Epoch: k32(1), Round: 3, Slot: 2, Server: 1, Digest: k32(0x50), Sig: k64(0x60)},
			&ForwardRoot{Epoch: k32(1), Round: 3, Server: 1, Entries: []AccountEntry{{Slot: 2, Digest: k32(0x53)}, {Slot: 5, Digest: k32(0x52)}}, Sig: k64(0x74)}), Attests: []Attest{}}},
		{"attestreq-silent", TypeAttestReq, &AttestReq{Epoch: k32(1), Number: 9, Kind: AttestSilent, Round: 3}},
		{"charge-silent", TypeCharge, &Charge{Kind: EvSilent, Number: 9, Item: (&OnionReceipt{Epoch: k32(1), Round: 3, Slot: 2, Server: 1, Digest: k32(0x50), Sig: k64(0x60)}).Marshal(),
			Attests: []Attest{{AttestReq: AttestReq{Epoch: k32(1), Number: 9, Kind: AttestSilent, Round: 3}, Lacking: 2, Signer: 0, Sig: k64(0x37)}}}},
		{"closingproposal", TypeClosingProposal, &ClosingProposal{Closing{Epoch: k32(1), Rounds: []ClosingRound{{ClosedPublished, k32(0xa0)}, {ClosedVoid, k32(0xa1)}, {}}, Pairs: 7, Pool: k32(0xa2)}}},
		{"closingsig", TypeClosingSig, &ClosingSig{Epoch: k32(1), Digest: k32(0xa3), Index: 2, Sig: k64(0x32)}},
		{"closing", TypeClosing, &Closing{Epoch: k32(1), Rounds: []ClosingRound{{ClosedPublished, k32(0xa0)}, {ClosedVoid, k32(0xa1)}, {}}, Pairs: 7, Pool: k32(0xa2), Sigs: [][64]byte{k64(0x30), k64(0x31)}}},
		{"windowreq", TypeWindowReq, &WindowReq{Epoch: k32(1), Number: 9}},
		{"statereq", TypeStateReq, Raw{}},
		{"state", TypeState, &State{Live: 3, MinServers: 3, MinClients: 2, Waiting: 4, Phase: PhaseRounds, Number: 12, Registered: 5, Done: 7, Rounds: 32, RoundMillis: 850, SinceEnd: 41000}},
		{"window", TypeWindow, &Window{Items: []WindowItem{{Number: 8, Epoch: k32(0xb1), Group: []byte("descriptor"), Closing: []byte("record"), Pool: []byte("pool")}, {Number: 7, Epoch: k32(0xb0), Group: []byte{}, Closing: []byte{}, Pool: []byte{}}}}},
		{"root", TypeRoot, &Root{Epoch: k32(1), Round: 2, S: 1, Root: k32(9), Sig: k64(10)}},
		{"rootrelay", TypeRootRelay, &RootRelay{Root: Root{Epoch: k32(1), Round: 2, S: 1, Root: k32(9), Sig: k64(10)}, Relays: []RelaySig{{Index: 3, Sig: k64(11)}, {Index: 2, Sig: k64(12)}}}},
		{"receipt", TypeReceipt, &Receipt{Epoch: k32(1), Server: 2, RegKey: k32(0xa0), RegHash: k32(0xc0), Sig: k64(0x6d)}},
		{"receiptset", TypeReceiptSet, &ReceiptSet{Epoch: k32(1), RegKey: k32(0xa0), Receipts: []Receipt{
			{Epoch: k32(1), Server: 0, RegKey: k32(0xa0), RegHash: k32(0xc0), Sig: k64(0x6e)}, {Epoch: k32(1), Server: 1, RegKey: k32(0xa0), RegHash: k32(0xc0), Sig: k64(0x6f)}}}},
		{"keyevidence", TypeKeyEvidence, &KeyEvidence{Epoch: k32(1), Slot: 3, LTKey: k32(0xd0), LTSig: k64(0xe0)}},
		{"accuse", TypeAccuse, &Accuse{Epoch: k32(1), Round: 3, S: 1, Pos: 2, Zp: k32(0x22), ZpProof: k64(0x33),
			In: Evidence{Entry: []byte("onion"), Path: [][32]byte{k32(0x44), k32(0x45)}, Root: k32(0x55), Sig: k64(0x66)}, Sig: k64(0x77)}},
		{"blamereq", TypeBlameReq, &BlameReq{Epoch: k32(1), Round: 3, T: 0, Out: 2}},
		{"blamestep", TypeBlameStep, &BlameStep{Epoch: k32(1), Round: 3, T: 0, Out: 2, In: 5, Route: []byte{0x88, 0x89}, Z: k32(0x11), ZProof: k64(0x12), Zp: k32(0x21), ZpProof: k64(0x23),
			Input: Evidence{Entry: []byte("client onion"), Path: [][32]byte{}, Sig: k64(0x99)}, Sig: k64(0xaa)}},
		{"equivocation", TypeEquivocation, &Equivocation{A: Root{Epoch: k32(1), Round: 3, S: 1, Root: k32(2), Sig: k64(3)}, B: Root{Epoch: k32(1), Round: 3, S: 1, Root: k32(4), Sig: k64(5)}}},
		{"doublesubmit", TypeDoubleSubmit, &DoubleSubmit{Epoch: k32(1), Round: 3, Slot: 2, HashA: k32(4), SigA: k64(5), HashB: k32(6), SigB: k64(7)}},
		{"dropreq", TypeDropReq, &DropReq{Epoch: k32(1), Round: 1, T: 2, In: 5}},
		{"dropstep", TypeDropStep, &DropStep{Epoch: k32(1), Round: 1, T: 2, In: 5, Out: 3, Route: k64(0x40), Sig: k64(0x80)}},
		{"dupabort", TypeDupAbort, &DupAbort{Epoch: k32(1), S: 1, Comp: 3, Value: k32(0x40), SlotA: 2, SlotB: 7, Sigs: [][64]byte{k64(0x80), {}, k64(0xa0)}}},
		{"dupquery", TypeDupQuery, &EpochRef{Epoch: k32(1), Reason: []byte{}}},
		{"dupproof", TypeDupProof, &DupProof{Epoch: k32(1), Slot: 7, Proof: k64(0xc0)}},
		{"indexreq", TypeIndexReq, &IndexReq{Cursor: 0x0102030405060708}},
		{"index", TypeIndex, &Index{Next: 7, More: true, Entries: []IndexEntry{{FileID: k32(0xe0), Name: []byte("f.txt"), Size: 9, Chunks: 1, Round: 2, Time: 1700000000}}, Manifests: [][]byte{[]byte("\x89RIFFLEM\x01\x02\x01\x00\x00\x04\x00\x00\x00\x00\x00")}, Removed: [][32]byte{k32(0xf0)}, Closings: [][]byte{(&Closing{Epoch: k32(1), Rounds: []ClosingRound{{ClosedPublished, k32(0xa0)}}, Sigs: [][64]byte{k64(0x30)}}).Marshal()}}},
		{"ack", TypeAck, Raw{}},
		{"error", TypeError, Raw("no such epoch")},
	}
}

// frame is a vector's full frame: header and body.
func (v vector) frame() []byte {
	var buf bytes.Buffer
	if err := WriteFrame(&buf, v.t, v.msg.Marshal()); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// vectorLines is the vector file's content, one line per vector:
// name, type number, SHA-256 of the frame, the frame in hex.
func vectorLines(vs []vector) string {
	var b strings.Builder
	b.WriteString("# riffle wire test vectors (protocol version 1), written by the tests of internal/wire.\n")
	b.WriteString("# One frame per line: name, message type, SHA-256 of the frame, frame (u8 type, u32 body length, body) in hex.\n")
	for _, v := range vs {
		f := v.frame()
		fmt.Fprintf(&b, "%s %d %x %x\n", v.name, v.t, sha256.Sum256(f), f)
	}
	return b.String()
}

// TestVectors pins the encoding of every type of the message table in
// testdata/vectors.txt and checks, for each, decode(encode(x)) == x and
// encode(decode(b)) == b from the file's bytes, with the table's decoder.
func TestVectors(t *testing.T) {
	vs := vectors()
	seen := map[Type]bool{}
	for _, v := range vs {
		seen[v.t] = true
	}
	for _, m := range Messages {
		if !seen[m.Type] {
			t.Errorf("message type %d (%s) has no vector", m.Type, m.Name)
		}
	}
	want := vectorLines(vs)
	if *update {
		if err := os.WriteFile(vectorFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(vectorFile)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s differs from the encodings (run go test -run TestVectors -update ./internal/wire/ after a deliberate change):\n%s", vectorFile, diffLines(string(got), want))
	}

	byName := map[string]vector{}
	for _, v := range vs {
		byName[v.name] = v
		// decode(encode(x)) == x.
		m, err := v.dec(v.msg.Marshal())
		if err != nil {
			t.Errorf("%s: decode: %v", v.name, err)
			continue
		}
		if !reflect.DeepEqual(m, v.msg) {
			t.Errorf("%s: decoded %+v, want %+v", v.name, m, v.msg)
		}
	}
	// encode(decode(b)) == b, from the file's bytes through ReadFrame.
	sc := bufio.NewScanner(bytes.NewReader(got))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("bad vector line %q", line)
		}
		v, ok := byName[f[0]]
		ty, err := strconv.Atoi(f[1])
		if !ok || err != nil || Type(ty) != v.t {
			t.Fatalf("vector %s: unknown name or type %s", f[0], f[1])
		}
		frame, err := hex.DecodeString(f[3])
		if err != nil {
			t.Fatal(err)
		}
		if h := sha256.Sum256(frame); hex.EncodeToString(h[:]) != f[2] {
			t.Fatalf("vector %s: SHA-256 does not match the frame", f[0])
		}
		n++
		var body []byte
		if v.t == TypeError {
			_, err = ReadFrame(bytes.NewReader(frame), TypeAck, MaxErrorText)
			var re *RemoteError
			if !errors.As(err, &re) {
				t.Fatalf("error vector read as %v", err)
			}
			body = []byte(re.Text)
		} else if body, err = ReadFrame(bytes.NewReader(frame), v.t, len(frame)); err != nil {
			t.Fatalf("vector %s: %v", f[0], err)
		}
		m, err := v.dec(body)
		if err != nil {
			t.Fatalf("vector %s: decode: %v", f[0], err)
		}
		if !bytes.Equal(m.Marshal(), body) {
			t.Fatalf("vector %s: decode→encode differs", f[0])
		}
	}
	if n != len(vs) {
		t.Fatalf("%s holds %d vectors, want %d", vectorFile, n, len(vs))
	}
}

func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	for i := 0; i < max(len(al), len(bl)); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			fmt.Fprintf(&out, "file: %.120s\nwant: %.120s\n", x, y)
		}
	}
	return out.String()
}
