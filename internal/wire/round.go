package wire

// Round messages (§5): submissions, batches, request lists, PIR rows and batch roots.

import (
	"errors"
	"fmt"
)

// Submit is one onion for one round and input slot, signed by the client's
// registration key (§5.1, mix.SignSubmission).
type Submit struct {
	Epoch [32]byte
	Round uint32
	Slot  uint32
	Onion []byte
	Sig   [64]byte
}

func (m *Submit) enc(e *Enc) {
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U32(m.Slot)
	e.Bytes(m.Onion)
	e.Fixed(m.Sig[:])
}

func (m *Submit) dec(d *Dec, l Limits) {
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	m.Slot = d.U32("slot")
	m.Onion = d.Bytes(l.Onion, "onion")
	m.Sig = d.Array64("signature")
}

func (m *Submit) Marshal() []byte {
	var e Enc
	e.Grow(32 + 4 + 4 + 4 + len(m.Onion) + 64)
	m.enc(&e)
	return e.B
}

// Segments is Marshal as segments that refer to the onion (Enc.Refs).
func (m *Submit) Segments() [][]byte { return refSegments(m.enc) }

func (m *Submit) Unmarshal(b []byte, l Limits) error {
	d := Dec{B: b}
	m.dec(&d, l)
	return d.Done("submission")
}

// SubmitBatch carries a primary's submissions of one round to S_0.
type SubmitBatch struct {
	Epoch [32]byte
	Round uint32
	Subs  []Submit
}

func (m *SubmitBatch) Marshal() []byte {
	var e Enc
	size := 32 + 4 + 4
	for i := range m.Subs {
		size += 32 + 4 + 4 + 4 + len(m.Subs[i].Onion) + 64
	}
	e.Grow(size)
	m.enc(&e)
	return e.B
}

// Segments is Marshal as segments that refer to the onions (Enc.Refs).
func (m *SubmitBatch) Segments() [][]byte { return refSegments(m.enc) }

func (m *SubmitBatch) enc(e *Enc) {
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U32(uint32(len(m.Subs)))
	for i := range m.Subs {
		m.Subs[i].enc(e)
	}
}

func (m *SubmitBatch) Unmarshal(b []byte, l Limits) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	n := d.Count(l.Clients, 32+8+4+64, "submissions")
	m.Subs = make([]Submit, n)
	for i := range m.Subs {
		m.Subs[i].dec(&d, l)
	}
	return d.Done("submission batch")
}

// refSegments runs an encoder with Enc.Refs and returns the segments.
func refSegments(enc func(*Enc)) [][]byte {
	e := Enc{Refs: true}
	enc(&e)
	return e.Segments()
}

// Batch is a mix batch: the input of S_{S} (S ≤ m-1), or for S = m the
// published payloads. Root is the Merkle root of Entries, Sig the sender's
// signature over it (§5.2). Every batch carries, in input-slot order, each
// client's submission signature and the SHA-256 of the onion it signs
// (ClientSigs, ClientHashes), passed on unchanged from S_0, so that every
// server checks that every slot of the round held an onion its client
// signed (§5.2: any server can check any position).
type Batch struct {
	Epoch   [32]byte
	Round   uint32
	S       uint16
	Entries [][]byte
	// Zeros, if set, has one ZeroRun per entry: bytes of the entry that
	// are all zero and are not sent (a published payload's padding: a
	// cover is b zero bytes). The receiver puts them back, so Entries and
	// everything signed over them are the same on both sides.
	Zeros        []ZeroRun
	ClientSigs   [][64]byte
	ClientHashes [][32]byte
	Root         [32]byte
	Sig          [64]byte
}

// ZeroRun is a run of N zero bytes at offset At of a batch entry, left out
// of the encoding (N = 0: nothing left out).
type ZeroRun struct{ At, N uint32 }

// zeros is entry i's run (none if Zeros is unset). A decoder puts a run
// back only while its sum with the bytes sent stays within Limits.Onion,
// so an elided batch never costs the receiver more memory than the same
// batch sent whole.
func (m *Batch) zeros(i int) ZeroRun {
	if i < len(m.Zeros) {
		return m.Zeros[i]
	}
	return ZeroRun{}
}

func (m *Batch) Marshal() []byte {
	var e Enc
	e.Grow(32 + 4 + 2 + sizeOfBytes(m.Entries) + 8*len(m.Entries) + 4 + 64*len(m.ClientSigs) + 4 + 32*len(m.ClientHashes) + 32 + 64)
	m.enc(&e)
	return e.B
}

// Segments is Marshal as segments that refer to the entries (Enc.Refs).
func (m *Batch) Segments() [][]byte { return refSegments(m.enc) }

func (m *Batch) enc(e *Enc) {
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U16(m.S)
	e.U32(uint32(len(m.Entries)))
	for i, x := range m.Entries {
		z := m.zeros(i)
		if z.N == 0 || uint64(z.At)+uint64(z.N) > uint64(len(x)) {
			z = ZeroRun{}
		}
		e.U32(z.At)
		e.U32(z.N)
		e.Bytes2(x[:z.At], x[z.At+z.N:])
	}
	encSigs(e, m.ClientSigs)
	e.U32(uint32(len(m.ClientHashes)))
	for i := range m.ClientHashes {
		e.Fixed(m.ClientHashes[i][:])
	}
	e.Fixed(m.Root[:])
	e.Fixed(m.Sig[:])
}

// BatchCap is the most bytes a Batch that UnmarshalAlloc takes under l
// can be sent in: l.Clients entries of at most l.Onion bytes each with
// their run and length fields, a signature and an onion hash each, and
// the fixed fields; MaxFrame at most.
func BatchCap(l Limits) int {
	n := int64(l.Clients)
	c := 32 + 4 + 2 + 4 + n*(4+4+4+int64(l.Onion)) + 4 + 64*n + 4 + 32*n + 32 + 64
	return int(min(c, MaxFrame))
}

func (m *Batch) Unmarshal(b []byte, l Limits) error { return m.UnmarshalAlloc(b, l, nil) }

// UnmarshalAlloc is Unmarshal with the entries whose zero runs it puts back
// built in alloc(n) (a recycled buffer of length n, which it fills in
// full), or new slices if alloc is nil. Other entries alias b.
//
// Nothing is rebuilt before the whole body has been read and found well
// formed, and what is rebuilt is bounded by the limits, not by the body: at
// most l.Clients entries of at most l.Onion bytes each, and all entries
// together at most l.Frame bytes (MaxFrame if unset), so that a batch sent
// without its zero runs never costs the receiver more memory than the same
// batch sent whole in a frame under that cap. A few hundred bytes of zero
// runs cannot make a receiver allocate gigabytes.
func (m *Batch) UnmarshalAlloc(b []byte, l Limits, alloc func(n int) []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	m.S = d.U16("server")
	// An entry is at least 12 bytes (run offset, run length, bytes
	// length), so the slice headers cost at most twice the body.
	n := d.Count(l.Clients, 12, "entries")
	m.Entries = make([][]byte, n)
	m.Zeros = nil
	frame := int64(l.Frame)
	if frame <= 0 || frame > MaxFrame {
		frame = MaxFrame
	}
	var total int64 // the entries' size once rebuilt
	for i := 0; i < n && d.Err == nil; i++ {
		z := ZeroRun{At: d.U32("zero run offset"), N: d.U32("zero run length")}
		rest := d.Bytes(l.Onion, "entry")
		if d.Err != nil {
			break
		}
		if z.N == 0 && z.At != 0 {
			return fmt.Errorf("wire: decode batch: entry %d: empty zero run at %d", i, z.At)
		}
		if uint64(z.At) > uint64(len(rest)) || uint64(len(rest))+uint64(z.N) > uint64(l.Onion) {
			return fmt.Errorf("wire: decode batch: entry %d: zero run of %d at %d with %d bytes sent (cap %d)", i, z.N, z.At, len(rest), l.Onion)
		}
		if total += int64(len(rest)) + int64(z.N); total > frame {
			return fmt.Errorf("%w: batch entries rebuilt to more than %d bytes", ErrTooLarge, frame)
		}
		// The sent bytes only, for now: the run is put back below.
		m.Entries[i] = rest
		if z.N == 0 {
			continue
		}
		if m.Zeros == nil {
			m.Zeros = make([]ZeroRun, n) // 8 bytes per entry of at least 12
		}
		m.Zeros[i] = z
	}
	m.ClientSigs = decSigs(&d, l.Clients)
	nh := d.Count(l.Clients, 32, "onion hashes")
	m.ClientHashes = make([][32]byte, nh)
	for i := range m.ClientHashes {
		m.ClientHashes[i] = d.Array32("onion hash")
	}
	m.Root = d.Array32("root")
	m.Sig = d.Array64("signature")
	if err := d.Done("batch"); err != nil {
		return err
	}
	for i, z := range m.Zeros {
		if z.N == 0 {
			continue
		}
		rest := m.Entries[i]
		var x []byte
		if alloc != nil {
			x = alloc(len(rest) + int(z.N))
			clear(x[z.At : z.At+z.N])
		} else {
			x = make([]byte, len(rest)+int(z.N))
		}
		copy(x, rest[:z.At])
		copy(x[z.At+z.N:], rest[z.At:])
		m.Entries[i] = x
	}
	return nil
}

// BatchHead is what a receiver checks of a Batch before decoding it: the
// epoch, round and sending position, and the root and signature that the
// sender signed over them (§5.2).
type BatchHead struct {
	Epoch [32]byte
	Round uint32
	S     uint16
	Root  [32]byte
	Sig   [64]byte
}

// batchMin is the smallest Batch body: the head, three empty counts, the
// root and the signature.
const batchMin = 32 + 4 + 2 + 4 + 4 + 4 + 32 + 64

// PeekBatch reads a Batch body's head without decoding or allocating
// anything: the epoch, round and position at its start, and the root and
// signature in its last 96 bytes (where every well-formed Batch has them;
// a later UnmarshalAlloc that succeeds has read the same root and
// signature). A receiver checks the sender, the epoch and the signature
// with it before it lets the body cost anything.
func PeekBatch(b []byte) (BatchHead, error) {
	var h BatchHead
	if len(b) < batchMin {
		return h, fmt.Errorf("wire: peek batch: %w: %d bytes, at least %d", ErrShort, len(b), batchMin)
	}
	d := Dec{B: b[:32+4+2]}
	h.Epoch = d.Array32("epoch id")
	h.Round = d.U32("round")
	h.S = d.U16("server")
	t := Dec{B: b[len(b)-32-64:]}
	h.Root = t.Array32("root")
	h.Sig = t.Array64("signature")
	return h, nil
}

// ListEntry is one row of a request list.
type ListEntry struct {
	ID  [32]byte
	Len uint32
}

// RoundList is the request list of a round (§5.3) with the ids published;
// Sigs holds S_0's signature alone in a proposal, so that any chain server
// can hand the proposal on, and one signature per chain position in the
// final list.
type RoundList struct {
	Epoch     [32]byte
	Round     uint32
	Entries   []ListEntry
	Published [][32]byte
	// Manifests are the published ids that the index took as manifests
	// (§6.4 v3): signed with the rest, so that a client can check that
	// the index it syncs holds every one of them.
	Manifests [][32]byte
	// Flags (u8, after Manifests, signed with the rest): ListVoid marks
	// a round that published nothing and is never run again (§5.2 v3);
	// a void list has no entries, published ids or manifests.
	Flags uint8
	// Pairs (after Flags, signed with the rest; §6.3 v3) are the round's
	// public demand: for each output position, in order, each listed id
	// that its payload requested, as (position, index into Entries),
	// sorted by position then index, each pair once. Decoys are drawn
	// from them. A void list has none.
	Pairs []ListPair
	Sigs  [][64]byte
}

// ListPair is one (output position, requested id) pair of a request list:
// Entry indexes the list's Entries.
type ListPair struct {
	Pos   uint32
	Entry uint32
}

// PairID returns the id of pair i.
func (m *RoundList) PairID(i int) [32]byte { return m.Entries[m.Pairs[i].Entry].ID }

// ListVoid is the RoundList flag of a void round.
const ListVoid uint8 = 1

// ListBlame, only beside ListVoid, marks the void of a round whose blame
// named a culprit (§5.2 v3, dead slots): its cause is public, so the
// list is evidence against nobody. No other flag exists.
const ListBlame uint8 = 2

// Blamed reports whether the list is the void of a blamed round.
func (m *RoundList) Blamed() bool { return m.Flags&ListBlame != 0 }

// Void reports whether the list records a void round.
func (m *RoundList) Void() bool { return m.Flags&ListVoid != 0 }

// MarshalBody encodes everything but the signatures.
func (m *RoundList) MarshalBody() []byte {
	var e Enc
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U32(uint32(len(m.Entries)))
	for _, x := range m.Entries {
		e.Fixed(x.ID[:])
		e.U32(x.Len)
	}
	e.U32(uint32(len(m.Published)))
	for _, x := range m.Published {
		e.Fixed(x[:])
	}
	e.U32(uint32(len(m.Manifests)))
	for _, x := range m.Manifests {
		e.Fixed(x[:])
	}
	e.U8(m.Flags)
	e.U32(uint32(len(m.Pairs)))
	for _, x := range m.Pairs {
		e.U32(x.Pos)
		e.U32(x.Entry)
	}
	return e.B
}

func (m *RoundList) Marshal() []byte {
	e := Enc{B: m.MarshalBody()}
	encSigs(&e, m.Sigs)
	return e.B
}

func (m *RoundList) Unmarshal(b []byte, l Limits) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	n := d.Count(l.Rows, 36, "list entries")
	m.Entries = make([]ListEntry, n)
	for i := range m.Entries {
		m.Entries[i].ID = d.Array32("chunk id")
		m.Entries[i].Len = d.U32("chunk length")
	}
	m.Published = decKeys(&d, l.Clients, "published ids")
	m.Manifests = decKeys(&d, l.Clients, "manifest ids")
	m.Flags = d.U8("list flags")
	np := d.Count(l.Clients*l.K, 8, "list pairs")
	m.Pairs = nil
	if np > 0 {
		m.Pairs = make([]ListPair, np)
	}
	for i := range m.Pairs {
		m.Pairs[i].Pos = d.U32("pair position")
		m.Pairs[i].Entry = d.U32("pair entry")
	}
	m.Sigs = decSigs(&d, MaxServers)
	if err := d.Done("request list"); err != nil {
		return err
	}
	if m.Flags&^(ListVoid|ListBlame) != 0 || m.Flags == ListBlame {
		return fmt.Errorf("wire: request list: unknown flags %#x", m.Flags)
	}
	if m.Void() && (len(m.Entries) > 0 || len(m.Published) > 0 || len(m.Manifests) > 0) {
		return errors.New("wire: request list: a void round with entries, published ids or manifests")
	}
	for i, x := range m.Pairs {
		if int(x.Pos) >= l.Clients || int(x.Entry) >= len(m.Entries) {
			return fmt.Errorf("wire: request list: pair %d (%d, %d) out of range", i, x.Pos, x.Entry)
		}
		if i > 0 {
			if p := m.Pairs[i-1]; p.Pos > x.Pos || (p.Pos == x.Pos && p.Entry >= x.Entry) {
				return fmt.Errorf("wire: request list: pair %d not after pair %d", i, i-1)
			}
		}
	}
	return nil
}

// Rows carries PIR masks (Query), answers (Answer) or padded answers
// (PadAnswers) for a set of input slots of one round: Rows[i] belongs to
// Slots[i/k], query slot i%k.
type Rows struct {
	Epoch [32]byte
	Round uint32
	Slots []uint32
	Rows  [][]byte
}

func (m *Rows) Marshal() []byte {
	var e Enc
	e.Grow(32 + 4 + 4 + 4*len(m.Slots) + sizeOfBytes(m.Rows))
	m.enc(&e)
	return e.B
}

// Segments is Marshal as segments that refer to the rows (Enc.Refs).
func (m *Rows) Segments() [][]byte { return refSegments(m.enc) }

func (m *Rows) enc(e *Enc) {
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U32(uint32(len(m.Slots)))
	for _, s := range m.Slots {
		e.U32(s)
	}
	e.U32(uint32(len(m.Rows)))
	for _, r := range m.Rows {
		e.Bytes(r)
	}
}

// Unmarshal decodes with at most maxSlots slots, k rows per slot, each row
// at most rowMax bytes.
func (m *Rows) Unmarshal(b []byte, maxSlots, k, rowMax int) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	n := d.Count(maxSlots, 4, "slots")
	m.Slots = make([]uint32, n)
	for i := range m.Slots {
		m.Slots[i] = d.U32("slot")
	}
	r := d.Count(n*k, 4, "rows")
	if d.Err == nil && r != n*k {
		return fmt.Errorf("wire: decode rows: %d rows for %d slots of %d", r, n, k)
	}
	m.Rows = make([][]byte, 0, r)
	for i := 0; i < r && d.Err == nil; i++ {
		m.Rows = append(m.Rows, d.Bytes(rowMax, "row"))
	}
	return d.Done("rows")
}

// Root is a server's signed Merkle root of one batch (§5.2), broadcast to
// every chain server so that two different roots signed for one (round,
// server) are evidence of equivocation. S and the signature are those of
// the Batch it summarises.
type Root struct {
	Epoch [32]byte
	Round uint32
	S     uint16
	Root  [32]byte
	Sig   [64]byte
}

const rootSize = 32 + 4 + 2 + 32 + 64

func (m *Root) Marshal() []byte {
	e := Enc{B: make([]byte, 0, rootSize)}
	e.Fixed(m.Epoch[:])
	e.U32(m.Round)
	e.U16(m.S)
	e.Fixed(m.Root[:])
	e.Fixed(m.Sig[:])
	return e.B
}

func (m *Root) Unmarshal(b []byte) error {
	d := Dec{B: b}
	m.Epoch = d.Array32("epoch id")
	m.Round = d.U32("round")
	m.S = d.U16("server")
	m.Root = d.Array32("root")
	m.Sig = d.Array64("signature")
	return d.Done("root")
}
