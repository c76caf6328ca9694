package wire

import "fmt"

// A primary's receipts and dry statements (docs/protocol.md §5.4): what
// tells a primary that held its client's onion from a client that sent
// none. A primary signs a receipt of every onion it takes and a dry
// statement for each slot of a round it holds no onion of; an honest one
// never signs both for one slot and round, so the two together are
// evidence against it (EvHeld).

const (
	// TypeOnionReceipt: primary → client, the reply to TypeSubmit (and
	// TypeHandover): its signed receipt of the onion, the same size for
	// every client.
	TypeOnionReceipt Type = 52
	// TypeShowReceipt: client → a chain server other than its primary,
	// an OnionReceipt of a round its epoch ended before; acknowledged.
	TypeShowReceipt Type = 53
	// TypeDryReq: S_0 → a primary, an EpochRef naming a round S_0 could
	// not fill; the reply is a DrySet of the primary's slots without an
	// onion of it.
	TypeDryReq Type = 54
	// TypeDrySet: the reply to TypeDryReq, and S_0 → every chain server
	// (acknowledged): the dry statements of the round it could not fill.
	TypeDrySet Type = 55
	// TypeAccountReq: a chain server → a primary, an EpochRef naming a
	// round; the reply is the primary's signed Account of it (§5.4, "A
	// silent primary").
	TypeAccountReq Type = 56
	// TypeAccount is the reply to TypeAccountReq. Its layout carries the
	// primary's forward root of the round (or its word that it forwarded
	// none), so it took a new number: 59, the account without it, is
	// retired.
	TypeAccount Type = 64
	// TypeForwardRoot: a primary → every chain server, its signed
	// ForwardRoot of a round, beside its forward to S_0; acknowledged.
	TypeForwardRoot Type = 63
)

// OnionReceiptSize is an OnionReceipt's fixed size.
const OnionReceiptSize = 32 + 4 + 4 + 2 + 32 + SigSize

// DrySize is a Dry's fixed size.
const DrySize = 32 + 4 + 4 + 2 + SigSize

// OnionReceipt is the primary at chain position Server's signature over
// H("riffle/v3/onion-receipt", the encoding before Sig): it took the
// onion whose submission digest (mix.SubmissionDigest) is Digest for
// slot Slot of round Round.
type OnionReceipt struct {
	Epoch  [32]byte
	Round  uint32
	Slot   uint32
	Server uint16
	Digest [32]byte
	Sig    [64]byte
}

// MarshalBody is the signed part.
func (m *OnionReceipt) MarshalBody() []byte {
	e := Enc{B: make([]byte, 0, OnionReceiptSize)}
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U32(m.Slot)
	e.U16(m.Server)
	e.Fixed(m.Digest[:])
	return e.B
}

func (m *OnionReceipt) Marshal() []byte { return append(m.MarshalBody(), m.Sig[:]...) }

func (m *OnionReceipt) dec(d *Dec) {
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	m.Slot = d.U32("slot")
	m.Server = d.U16("server")
	m.Digest = d.Array32("onion digest")
	m.Sig = d.Array64("signature")
}

func (m *OnionReceipt) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.dec(&d)
	return d.Done("onion receipt")
}

// Dry is the primary at chain position Server's signature over
// H("riffle/v3/dry", the encoding before Sig): it holds no onion for slot
// Slot of round Round, and takes none for it from then on.
type Dry struct {
	Epoch  [32]byte
	Round  uint32
	Slot   uint32
	Server uint16
	Sig    [64]byte
}

// MarshalBody is the signed part.
func (m *Dry) MarshalBody() []byte {
	e := Enc{B: make([]byte, 0, DrySize)}
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U32(m.Slot)
	e.U16(m.Server)
	return e.B
}

func (m *Dry) Marshal() []byte { return append(m.MarshalBody(), m.Sig[:]...) }

func (m *Dry) dec(d *Dec) {
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	m.Slot = d.U32("slot")
	m.Server = d.U16("server")
	m.Sig = d.Array64("signature")
}

func (m *Dry) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.dec(&d)
	return d.Done("dry statement")
}

// DrySet is the dry statements of one round, at most one a slot.
type DrySet struct {
	Epoch [32]byte
	Round uint32
	Dries []Dry
}

func (m *DrySet) Marshal() []byte {
	e := Enc{B: make([]byte, 0, 32+4+4+len(m.Dries)*DrySize)}
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U32(uint32(len(m.Dries)))
	for i := range m.Dries {
		e.B = append(e.B, m.Dries[i].Marshal()...)
	}
	return e.B
}

// DrySetHead decodes a DrySet's epoch and round alone: a receiver checks
// its sender's role before it decodes the statements.
func DrySetHead(b []byte) (epoch [32]byte, round uint32, err error) {
	d := Dec{B: b}
	epoch = d.Array32("epoch id")
	round = d.U32("round")
	return epoch, round, d.Err
}

func (m *DrySet) Unmarshal(b []byte, l Limits) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	n := d.Count(l.Clients, DrySize, "dry statements")
	m.Dries = make([]Dry, n)
	for i := 0; i < n && d.Err == nil; i++ {
		m.Dries[i].dec(&d)
	}
	return d.Done("dry set")
}

// AccountEntrySize is an AccountEntry's fixed size.
const AccountEntrySize = 4 + 32

// AccountEntry is one onion a primary receipted: its slot and submission
// digest.
type AccountEntry struct {
	Slot   uint32
	Digest [32]byte
}

// Account is the primary at chain position Server's signature over
// H("riffle/v3/account-rooted", the encoding before Sig): the onions of
// round Round it receipted, in slot order, whether it forwarded the
// round (Forwarded) and whether the account is final (Ended: signed once
// the epoch ended there, of a round whose every receipt it holds); Root,
// not signed here, is then its own signed ForwardRoot of the round. A
// primary's account of a round covers every receipt it signed of it; one
// missing from it, none given to the chain, or a round forwarded without
// its root, is what a majority's attestations (AttestSilent) charge it
// for on a receipt (EvSilent), and a receipt its root or its final
// account leaves out charges it alone (EvForward, EvAccount).
type Account struct {
	Epoch     [32]byte
	Round     uint32
	Server    uint16
	Forwarded bool
	Ended     bool
	Entries   []AccountEntry
	Sig       [64]byte
	Root      *ForwardRoot // exactly when Forwarded; never in evidence
}

// Account flags.
const (
	accountForwarded = 1 << 0
	accountEnded     = 1 << 1
)

// MarshalBody is the signed part.
func (m *Account) MarshalBody() []byte {
	e := Enc{B: make([]byte, 0, 32+4+2+1+4+len(m.Entries)*AccountEntrySize)}
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U16(m.Server)
	var f uint8
	if m.Forwarded {
		f |= accountForwarded
	}
	if m.Ended {
		f |= accountEnded
	}
	e.U8(f)
	e.U32(uint32(len(m.Entries)))
	for _, x := range m.Entries {
		e.U32(x.Slot)
		e.Fixed(x.Digest[:])
	}
	return e.B
}

// MarshalSigned is the signed part and the signature, without the root:
// an account as evidence (AccountItem).
func (m *Account) MarshalSigned() []byte { return append(m.MarshalBody(), m.Sig[:]...) }

func (m *Account) Marshal() []byte {
	e := Enc{B: m.MarshalSigned()}
	if m.Forwarded && m.Root != nil {
		e.Bytes(m.Root.Marshal())
	}
	return e.B
}

// decSigned decodes the signed part and the signature, at most l.Clients
// entries.
func (m *Account) decSigned(d *Dec, l Limits) {
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	m.Server = d.U16("server")
	f := d.U8("account flags")
	if d.Err == nil && f&^(accountForwarded|accountEnded) != 0 {
		d.Err = fmt.Errorf("account flags %#x", f)
	}
	m.Forwarded, m.Ended = f&accountForwarded != 0, f&accountEnded != 0
	n := d.Count(l.Clients, AccountEntrySize, "entries")
	m.Entries = make([]AccountEntry, n)
	for i := 0; i < n && d.Err == nil; i++ {
		m.Entries[i].Slot = d.U32("slot")
		m.Entries[i].Digest = d.Array32("onion digest")
	}
	m.Sig = d.Array64("signature")
	m.Root = nil
}

// Unmarshal decodes an account of at most l.Clients entries, and its root
// of as many.
func (m *Account) Unmarshal(b []byte, l Limits) error {
	d := Dec{B: b}
	m.decSigned(&d, l)
	if m.Forwarded && d.Err == nil {
		rb := d.Bytes(slotDigestsCap(l), "forward root")
		if d.Err == nil {
			m.Root = new(ForwardRoot)
			if err := m.Root.Unmarshal(rb, l); err != nil {
				return err
			}
		}
	}
	return d.Done("account")
}

// Covers reports whether the account names the onion of r's slot with
// r's digest.
func (m *Account) Covers(r *OnionReceipt) bool { return covers(m.Entries, r) }

// slotDigestsCap is a ForwardRoot's largest size within l.
func slotDigestsCap(l Limits) int { return 32 + 4 + 2 + 4 + l.Clients*AccountEntrySize + SigSize }

// ForwardRoot is the primary at chain position Server's signature over
// H("riffle/v3/forward-root", the encoding before Sig): the onions of
// round Round it forwards to S_0, slot and submission digest, in slot
// order; it takes no other onion of the round after it signed it. A
// receipt of the round's onion missing from it is the primary's (EvForward).
type ForwardRoot struct {
	Epoch   [32]byte
	Round   uint32
	Server  uint16
	Entries []AccountEntry
	Sig     [64]byte
}

// MarshalBody is the signed part.
func (m *ForwardRoot) MarshalBody() []byte {
	return slotDigestsBody(m.Epoch, m.Round, m.Server, m.Entries)
}

func (m *ForwardRoot) Marshal() []byte { return append(m.MarshalBody(), m.Sig[:]...) }

// ForwardRootHead decodes a ForwardRoot's epoch, round and primary
// alone: a receiver checks its sender's role before it decodes the
// entries.
func ForwardRootHead(b []byte) (epoch [32]byte, round uint32, server uint16, err error) {
	d := Dec{B: b}
	epoch = d.Array32("epoch id")
	round = d.U32("round")
	server = d.U16("server")
	return epoch, round, server, d.Err
}

// Unmarshal decodes a forward root of at most l.Clients entries.
func (m *ForwardRoot) Unmarshal(b []byte, l Limits) error {
	d := Dec{B: b}
	m.Epoch, m.Round, m.Server, m.Entries, m.Sig = decSlotDigests(&d, l)
	return d.Done("forward root")
}

// Covers reports whether the root names the onion of r's slot with r's
// digest.
func (m *ForwardRoot) Covers(r *OnionReceipt) bool { return covers(m.Entries, r) }

// slotDigestsBody is an Account's or ForwardRoot's signed part.
func slotDigestsBody(epoch [32]byte, round uint32, server uint16, xs []AccountEntry) []byte {
	e := Enc{B: make([]byte, 0, 32+4+2+4+len(xs)*AccountEntrySize)}
	e.Fixed(epoch[:])
	e.U32(round)
	e.U16(server)
	e.U32(uint32(len(xs)))
	for _, x := range xs {
		e.U32(x.Slot)
		e.Fixed(x.Digest[:])
	}
	return e.B
}

// decSlotDigests decodes an Account's or ForwardRoot's fields, at most
// l.Clients entries.
func decSlotDigests(d *Dec, l Limits) (epoch [32]byte, round uint32, server uint16, xs []AccountEntry, sig [64]byte) {
	epoch = d.Array32("epoch id")
	round = d.U32("round")
	server = d.U16("server")
	n := d.Count(l.Clients, AccountEntrySize, "entries")
	xs = make([]AccountEntry, n)
	for i := 0; i < n && d.Err == nil; i++ {
		xs[i].Slot = d.U32("slot")
		xs[i].Digest = d.Array32("onion digest")
	}
	sig = d.Array64("signature")
	return
}

func covers(xs []AccountEntry, r *OnionReceipt) bool {
	for _, x := range xs {
		if x.Slot == r.Slot && x.Digest == r.Digest {
			return true
		}
	}
	return false
}

// ForwardItem is an EvForward charge's item: a receipt and the same
// primary's forward root of the round (u32 length each).
func ForwardItem(r *OnionReceipt, f *ForwardRoot) []byte {
	var e Enc
	e.Bytes(r.Marshal())
	e.Bytes(f.Marshal())
	return e.B
}

// ParseForward decodes an EvForward item, a root of at most l.Clients
// entries.
func ParseForward(b []byte, l Limits) (OnionReceipt, ForwardRoot, error) {
	var r OnionReceipt
	var f ForwardRoot
	d := Dec{B: b}
	rb := d.Bytes(OnionReceiptSize, "receipt")
	fb := d.Bytes(maxChargeItem, "forward root")
	if err := d.Done("forward evidence"); err != nil {
		return r, f, err
	}
	if err := r.Unmarshal(rb); err != nil {
		return r, f, err
	}
	return r, f, f.Unmarshal(fb, l)
}

// AccountItem is an EvAccount charge's item: a receipt and the same
// primary's final account of the round, without its root (u32 length
// each).
func AccountItem(r *OnionReceipt, a *Account) []byte {
	var e Enc
	e.Bytes(r.Marshal())
	e.Bytes(a.MarshalSigned())
	return e.B
}

// ParseAccountItem decodes an EvAccount item, an account of at most
// l.Clients entries.
func ParseAccountItem(b []byte, l Limits) (OnionReceipt, Account, error) {
	var r OnionReceipt
	var a Account
	d := Dec{B: b}
	rb := d.Bytes(OnionReceiptSize, "receipt")
	ab := d.Bytes(maxChargeItem, "account")
	if err := d.Done("account evidence"); err != nil {
		return r, a, err
	}
	if err := r.Unmarshal(rb); err != nil {
		return r, a, err
	}
	ad := Dec{B: ab}
	a.decSigned(&ad, l)
	return r, a, ad.Done("account")
}

// HeldItem is an EvHeld charge's item: a receipt and a dry statement.
func HeldItem(r *OnionReceipt, dr *Dry) []byte {
	return append(r.Marshal(), dr.Marshal()...)
}

// ParseHeld decodes an EvHeld item.
func ParseHeld(b []byte) (OnionReceipt, Dry, error) {
	var r OnionReceipt
	var dr Dry
	d := Dec{B: b}
	r.dec(&d)
	dr.dec(&d)
	return r, dr, d.Done("held onion evidence")
}
