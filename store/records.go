package store

import (
	"fmt"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
)

// ID is a chunk id: the plain SHA-256 of the chunk's bytes (§2). A
// file id is the id of the file's root manifest chunk (§6.4).
type ID = [32]byte

// EpochID is an epoch id (§3), a SHA-256 computed by the node.
type EpochID = [32]byte

// Chunk is a chunk's id with its bytes. The store checks that the id is
// the SHA-256 of the bytes.
type Chunk struct {
	ID   ID
	Data []byte
}

// IndexEntry is one file of the public index (§7): the file id (its
// root manifest's chunk id) and what the manifest says, with the round and
// time of its first publication. The node builds it from the manifest.
type IndexEntry struct {
	FileID ID
	Name   string // UTF-8, at most MaxNameBytes
	Size   uint64 // file size in bytes
	Chunks uint32 // number of data chunks
	Epoch  EpochID
	Round  uint32
	Time   time.Time // first publication
}

// Manifest is one manifest chunk of the public index (§6.4 v3): its
// id and bytes, with the epoch, round and output position (pseudonym) of
// its first publication. Every manifest chunk of a file, root and inner
// nodes alike, is indexed with its bytes, so that a client learns every
// chunk id of a file from the index it syncs whole, never from a PIR
// answer. The node decides which chunks are indexed (they parse, within
// the caps per pseudonym and per epoch).
type Manifest struct {
	ID    ID
	Epoch EpochID
	Round uint32
	Pos   uint32 // output position in its round
	Data  []byte // at most MaxChunkSize
}

// Request is one entry of a round's request list (§5.3): a chunk id
// and the chunk's length in bytes.
type Request struct {
	ID     ID
	Length uint32
}

// RoundRecord is what a server keeps of a round (§5.3, §7): the ids
// published, in output order, and the request list that defines the
// round's PIR database, in row order.
type RoundRecord struct {
	Epoch     EpochID
	Round     uint32
	Time      time.Time
	Published []ID
	Requests  []Request
}

// EpochRecord is what a server keeps of an epoch (§3). Descriptor is
// the signed final descriptor in the node's encoding, opaque here. Nothing
// secret belongs in it: §3 forbids writing any epoch secret to disk.
type EpochRecord struct {
	ID         EpochID
	Number     uint64
	Started    time.Time
	Ended      time.Time // zero while the epoch runs
	Rounds     uint32    // rounds completed
	EndReason  string    // at most MaxTextBytes
	Descriptor []byte    // at most MaxDescriptor
}

// encode: version ‖ file id ‖ name ‖ u64 size ‖ u32 chunks ‖ epoch id ‖
// u32 round ‖ u64 time.
func (e *IndexEntry) encode() []byte {
	w := enc{wire.Enc{B: make([]byte, 0, 1+32+4+len(e.Name)+8+4+32+4+8)}}
	w.U8(recordVersion)
	w.id(e.FileID)
	w.str(e.Name)
	w.U64(e.Size)
	w.U32(e.Chunks)
	w.id(e.Epoch)
	w.U32(e.Round)
	w.time(e.Time)
	return w.B
}

func decodeIndexEntry(b []byte) (IndexEntry, error) {
	d := dec{Dec: wire.Dec{B: b}, what: "index entry"}
	var e IndexEntry
	d.version()
	e.FileID = d.id("file id")
	e.Name = d.str("name", MaxNameBytes)
	e.Size = d.U64("size")
	e.Chunks = d.U32("chunks")
	e.Epoch = d.id("epoch")
	e.Round = d.U32("round")
	e.Time = d.time("time")
	return e, d.finish()
}

// encode: version ‖ epoch id ‖ u32 round ‖ u32 position ‖ bytes.
func (m *Manifest) encode() []byte {
	w := enc{wire.Enc{B: make([]byte, 0, 1+32+4+4+4+len(m.Data))}}
	w.U8(recordVersion)
	w.id(m.Epoch)
	w.U32(m.Round)
	w.U32(m.Pos)
	w.bytes(m.Data)
	return w.B
}

// decodeManifest decodes a manifest record of the chunk id; the bytes are
// copied out of the value.
func decodeManifest(id ID, b []byte) (Manifest, error) {
	d := dec{Dec: wire.Dec{B: b}, what: "manifest record"}
	m := Manifest{ID: id}
	d.version()
	m.Epoch = d.id("epoch")
	m.Round = d.U32("round")
	m.Pos = d.U32("position")
	m.Data = d.bytes("manifest", MaxChunkSize)
	return m, d.finish()
}

func (r *RoundRecord) validate() error {
	if r.Time.IsZero() {
		return fmt.Errorf("store: round %d record has no time", r.Round)
	}
	if len(r.Published) > MaxRoundIDs || len(r.Requests) > MaxRoundIDs {
		return fmt.Errorf("store: round %d has %d published ids and %d requests, cap %d",
			r.Round, len(r.Published), len(r.Requests), MaxRoundIDs)
	}
	for i, q := range r.Requests {
		if q.Length > MaxChunkSize {
			return fmt.Errorf("store: round %d request %d has length %d > %d", r.Round, i, q.Length, MaxChunkSize)
		}
	}
	return nil
}

// encode: version ‖ epoch id ‖ u32 round ‖ u64 time ‖ u32 n ‖ n ids ‖
// u32 L ‖ L × (id ‖ u32 length).
func (r *RoundRecord) encode() []byte {
	w := enc{wire.Enc{B: make([]byte, 0, 1+32+4+8+4+32*len(r.Published)+4+36*len(r.Requests))}}
	w.U8(recordVersion)
	w.id(r.Epoch)
	w.U32(r.Round)
	w.time(r.Time)
	w.U32(uint32(len(r.Published)))
	for _, id := range r.Published {
		w.id(id)
	}
	w.U32(uint32(len(r.Requests)))
	for _, q := range r.Requests {
		w.id(q.ID)
		w.U32(q.Length)
	}
	return w.B
}

func decodeRoundRecord(b []byte) (RoundRecord, error) {
	d := dec{Dec: wire.Dec{B: b}, what: "round record"}
	var r RoundRecord
	d.version()
	r.Epoch = d.id("epoch")
	r.Round = d.U32("round")
	r.Time = d.time("time")
	if n := d.Count(MaxRoundIDs, 32, "published ids"); n > 0 {
		r.Published = make([]ID, n)
		for i := range r.Published {
			r.Published[i] = d.id("published id")
		}
	}
	if n := d.Count(MaxRoundIDs, 36, "requests"); n > 0 {
		r.Requests = make([]Request, n)
		for i := range r.Requests {
			r.Requests[i].ID = d.id("request id")
			r.Requests[i].Length = d.U32("request length")
			if d.Err == nil && r.Requests[i].Length > MaxChunkSize {
				d.fail("request %d length %d > %d", i, r.Requests[i].Length, MaxChunkSize)
			}
		}
	}
	return r, d.finish()
}

func (e *EpochRecord) validate() error {
	if err := validText("epoch end reason", e.EndReason, MaxTextBytes); err != nil {
		return err
	}
	if len(e.Descriptor) > MaxDescriptor {
		return fmt.Errorf("store: epoch %d descriptor of %d bytes exceeds %d", e.Number, len(e.Descriptor), MaxDescriptor)
	}
	return nil
}

// encode: version ‖ epoch id ‖ u64 number ‖ u64 started ‖ u64 ended ‖
// u32 rounds ‖ end reason ‖ descriptor.
func (e *EpochRecord) encode() []byte {
	w := enc{wire.Enc{B: make([]byte, 0, 1+32+8+8+8+4+4+len(e.EndReason)+4+len(e.Descriptor))}}
	w.U8(recordVersion)
	w.id(e.ID)
	w.U64(e.Number)
	w.time(e.Started)
	w.time(e.Ended)
	w.U32(e.Rounds)
	w.str(e.EndReason)
	w.bytes(e.Descriptor)
	return w.B
}

func decodeEpochRecord(b []byte) (EpochRecord, error) {
	d := dec{Dec: wire.Dec{B: b}, what: "epoch record"}
	var e EpochRecord
	d.version()
	e.ID = d.id("epoch id")
	e.Number = d.U64("number")
	e.Started = d.time("started")
	e.Ended = d.time("ended")
	e.Rounds = d.U32("rounds")
	e.EndReason = d.str("end reason", MaxTextBytes)
	e.Descriptor = d.bytes("descriptor", MaxDescriptor)
	return e, d.finish()
}
