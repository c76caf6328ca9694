package proto

import (
	"bytes"
	"fmt"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/pir"
)

// What a group costs (docs/operator.md, "What a group costs"): the bytes
// of riffle messages (frames: a 5-byte header and the body) that one
// client and one server send and receive, from the group's constants
// alone. The transport adds its own framing and encryption, a few per
// cent, not counted here.
//
// A client's figure is a worst case of the group (§5, "The group pace"):
// every message at the size the constants allow (n_max clients, L_max
// rows, m_max servers, chunk b, k slots, R rounds), and epochs as short as
// an honest server lets them be: an epoch attempt with r rounds holds the
// client for at least the registration window (no honest server closes
// registration before it, and a client starts its epoch attempts at
// least a window apart, client.go) and r − 1 round intervals (every
// honest server keeps the pace, pace.go).

// FrameHeader is a frame's u8 type and u32 body length.
const FrameHeader = 5

// Traffic is a number of bytes sent and received.
type Traffic struct {
	Send, Recv int64
}

func (t Traffic) add(u Traffic) Traffic { return Traffic{t.Send + u.Send, t.Recv + u.Recv} }

func (t Traffic) times(x int64) Traffic { return Traffic{t.Send * x, t.Recv * x} }

// Rate is bytes per hour, each way.
type Rate struct {
	SendPerHour, RecvPerHour float64
}

// Max is the larger of the two directions, bytes per second: what
// --max-rate is held against.
func (r Rate) Max() float64 { return max(r.SendPerHour, r.RecvPerHour) / 3600 }

// ClientCost is what one client of a group moves.
type ClientCost struct {
	// Round is one round's messages: its onion, the wait for the round's
	// request list and the list, its k PIR queries and their answers, and
	// its share of the index sync: the index takes at most IndexCap
	// manifest chunks per R rounds (manifests.go), whatever the epochs.
	Round Traffic
	// Epoch is one epoch attempt's messages beyond its rounds: the open
	// and final descriptors, the registration and its receipts, the whole
	// decoy window from every server of two chains, the index syncs (at
	// its start and at each checkpoint) of what an epoch adds to the
	// index beyond its rounds' share (one manifest chunk, for the budget's
	// rounding up, and a closing record) and a duplicate-share query.
	Epoch Traffic
	// Worst is the most per hour, over epochs of any length (GroupCost).
	Worst Rate
	// Idle is per hour with full epochs of R rounds back to back at the
	// pace: what a client that stays sends and receives, busy or not.
	Idle Rate
}

// frame is a message's bytes on a stream.
func frame(body []byte) int64 { return int64(FrameHeader + len(body)) }

// GroupCost is what one client of a group with parameters p moves, at
// chains of MaxGroupServers (m_max) servers.
func GroupCost(p Params) ClientCost {
	m, n, L := MaxGroupServers, int(p.MaxClients), int(p.MaxRows)
	b, k, R := int(p.ChunkSize), int(p.K), int64(p.Rounds)
	var c ClientCost
	ref := (&wire.EpochRef{}).Marshal()
	ack := frame(nil)

	// A round (client_epoch.go rounds, client_requests.go query).
	sub := (&wire.Submit{Onion: make([]byte, mix.OnionSize(b, k, m))}).Marshal()
	masks := make([][]byte, k)
	rows := make([][]byte, k)
	for t := range k {
		masks[t] = make([]byte, pir.MaskBytes(L))
		rows[t] = make([]byte, b)
	}
	query := (&wire.Rows{Slots: []uint32{0}, Rows: masks}).Marshal()
	answer := (&wire.Rows{Slots: []uint32{0}, Rows: rows}).Marshal()
	list := maxRoundList(n, L, k, m).Marshal()
	// The index's share of a round: IndexCap chunks of b bytes and their
	// 64-byte items per R rounds, rounded up.
	manifests := int64(IndexCap(n, p.ChunkSize))
	indexRound := (manifests*int64(b+64) + R - 1) / R
	// A page asked at each checkpoint (checkpoint.go), spread over the
	// rounds: what it brings is the index's share above. A sync from the
	// other servers on a gap, which only a primary that leaves manifests
	// out causes, is not counted.
	cps := int64(len(Checkpoints(uint32(R), p.RoundIntervalMs, uint32(p.W))))
	cpReq := (cps*frame(make([]byte, wire.IndexReqSize)) + R - 1) / R
	cpPage := (cps*FrameHeader + R - 1) / R
	c.Round = Traffic{
		Send: frame(sub) + frame(ref) + frame(query) + cpReq,
		Recv: ack + frame(list) + frame(answer) + indexRound + cpPage,
	}

	// An epoch attempt (client_epoch.go oneEpoch, join; window_client.go;
	// indexsync.go).
	open := maxDescriptor(p, m, 0)
	final := maxDescriptor(p, m, n)
	reg := (&wire.ClientRegister{Reg: wire.Register{Reg: make([]byte, mix.RegistrationSize(m))}}).Marshal()
	receipts := (&wire.ReceiptSet{Receipts: make([]wire.Receipt, m)}).Marshal()
	windowReq := (&wire.WindowReq{}).Marshal()
	closing := closingSize(int(R), m)
	pool := 32 + 8 + 36*min(wire.MaxPoolPairs, n*k*int(R))
	group := open.Desc.MarshalGroup()
	// The whole window from every server of N's and N − 1's chains: an
	// item a number back WindowLookback numbers, DecoyEpochs with pools,
	// and descriptors alone on to the budgets' depth (BudgetLookback).
	window := 4 + WindowLookback*(8+32+3*4+len(group)+closing) + DecoyEpochs*pool +
		(BudgetLookback-WindowLookback)*(8+32+3*4+len(group))
	askers := int64(2 * m)
	index := (b + 64) + closing
	// Pages of a full epoch's index, asked for in every attempt (the last
	// page says the log is done), and the end check's (checkpoint.go).
	pages := int64((int64(index)+manifests*int64(b+64))/wire.IndexPageBytes + 3)

	iv := time.Duration(p.RoundIntervalMs) * time.Millisecond
	rw := time.Duration(p.RegWindowMs) * time.Millisecond
	// State requests until the final descriptor (waitstate.go): one at
	// the attempt's start, then at least StateEvery/2 apart through the
	// registration window.
	states := int64(1 + rw/(StateEvery/2))
	c.Epoch = Traffic{
		Send: frame(ref) + frame(reg) + frame(receipts[:wire.ReceiptSetSize(0)]) + askers*frame(windowReq) +
			pages*frame(make([]byte, wire.IndexReqSize)) + frame(ref) + states*frame(nil),
		Recv: frame(open.Marshal()) + frame(final.Marshal()) + frame(receipts) + askers*int64(FrameHeader+window) +
			pages*FrameHeader + int64(index) + frame(make([]byte, wire.DupAbortSize(m))) + states*frame(make([]byte, wire.StateSize)),
	}

	perHour := func(t Traffic, d time.Duration) Rate {
		h := float64(time.Hour) / float64(max(d, time.Millisecond))
		return Rate{float64(t.Send) * h, float64(t.Recv) * h}
	}
	// The bytes of an attempt over its least time are a ratio of two
	// linear functions of its rounds r, so their most is at r = 1 or
	// r = R (r = 0 moves less than r = 1 in the same least time).
	full := perHour(c.Epoch.add(c.Round.times(R)), rw+time.Duration(R-1)*iv)
	one := perHour(c.Epoch.add(c.Round), rw)
	c.Worst = Rate{max(full.SendPerHour, one.SendPerHour), max(full.RecvPerHour, one.RecvPerHour)}
	c.Idle = full
	return c
}

// ServerCost is what one server of a chain of m moves per hour with n
// clients, at the pace, full epochs back to back: an upper bound over the
// chain positions (the last server sends the published batch to every
// other; S_0 takes every primary's submissions), with each primary
// serving n/m clients. Setup and blame messages are left out (an epoch's
// setup moves a few hundred KB, a round many MB).
func ServerCost(p Params, n, m int) Rate {
	b, k, R := int(p.ChunkSize), int(p.K), int64(p.Rounds)
	q := p
	q.MaxClients, q.MaxRows = uint32(n), uint32(min(int(p.MaxRows), n*k))
	cl := GroupCost(q)
	own := int64((n + m - 1) / m)
	onion := int64(mix.OnionSize(b, k, m)) + 96 // an entry with its client's signature and hash
	payload := int64(mix.PayloadSize(b, k))
	list := frame(maxRoundList(n, int(q.MaxRows), k, m).Marshal())
	pads := int64(n-int(own)) * int64(k*b)
	round := Traffic{
		// To its clients, the batch on, the published batch to every
		// other server, pads for the others' clients, its clients'
		// submissions to S_0, the request list to every server.
		Send: own*cl.Round.Recv + int64(n)*onion + int64(m-1)*int64(n)*payload + pads + own*onion + int64(m)*list,
		// From its clients, every primary's submissions (S_0), the batch
		// in, the published batch, its clients' pads, the list.
		Recv: own*cl.Round.Send + int64(n)*onion + int64(n)*onion + int64(n)*payload + int64(m-1)*own*int64(k*b) + list,
	}
	epoch := Traffic{Send: own * cl.Epoch.Recv, Recv: own * cl.Epoch.Send}
	iv := time.Duration(p.RoundIntervalMs) * time.Millisecond
	rw := time.Duration(p.RegWindowMs) * time.Millisecond
	t := epoch.add(round.times(R))
	h := float64(time.Hour) / float64(rw+time.Duration(R-1)*iv)
	return Rate{float64(t.Send) * h, float64(t.Recv) * h}
}

// maxRoundList is a request list at its caps: L entries, n published ids
// and manifests, n·k pairs, m signatures.
func maxRoundList(n, L, k, m int) *wire.RoundList {
	return &wire.RoundList{Entries: make([]wire.ListEntry, L), Published: make([][32]byte, n), Manifests: make([][32]byte, n),
		Pairs: make([]wire.ListPair, n*k), Sigs: make([][64]byte, m)}
}

// maxDescriptor is a signed descriptor of m servers and n clients with
// every field at its cap (peer ids, nicks, addresses, key proofs, the
// previous certificate).
func maxDescriptor(p Params, m, n int) *wire.Signed {
	d := wire.Descriptor{Params: p.Wire(), Clients: make([]wire.ClientEntry, n)}
	addrs := make([][]byte, wire.MaxAddrs)
	for i := range addrs {
		addrs[i] = make([]byte, wire.MaxAddr)
	}
	for range m {
		d.Group = append(d.Group, wire.GroupEntry{PeerID: make([]byte, wire.MaxPeerID), Nick: make([]byte, wire.MaxNick), Addrs: addrs,
			PoK: make([]byte, wire.MaxPoK), Y: make([][32]byte, p.Rounds), Yp: make([][32]byte, p.Rounds)})
	}
	d.Previous = wire.Cert{Kind: wire.CertFinal}
	for range m {
		d.Previous.Chain = append(d.Previous.Chain, make([]byte, wire.MaxPeerID))
		d.Previous.Sigs = append(d.Previous.Sigs, wire.CertSig{})
	}
	if n > 0 {
		d.Reveals = make([][wire.CommitSize]byte, m)
	}
	return &wire.Signed{Final: n > 0, Desc: d, Sigs: make([][64]byte, m)}
}

// closingSize is a closing record of R rounds signed by m servers.
func closingSize(R, m int) int { return 32 + 4 + 33*R + 4 + 32 + 4 + 64*m }

// FormatRate says a rate in bytes per hour with a binary prefix.
func FormatRate(perHour float64) string { return FormatBytes(perHour) + "/h" }

func FormatBytes(x float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for x >= 1024 && i < len(units)-1 {
		x /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f %s", x, units[i])
	}
	return fmt.Sprintf("%.1f %s", x, units[i])
}

// Rows of docs/operator.md's cost table.
var (
	costTablePaces  = []uint32{200, DefaultRoundIntervalMs, 2000, 10_000}
	costTableCrowds = []int{16, 64, 200}
)

// CostTable is docs/operator.md's table of what a client and a server
// move a day, at the default parameters but the pace, for chains of three
// servers: the client's figure at the pace with full epochs (a client
// that stays, busy or idle: cover costs what jobs do) and its worst case
// (GroupCost), the server's per crowd (ServerCost).
func CostTable() string {
	var b bytes.Buffer
	d := DefaultParams()
	fmt.Fprintf(&b, "| pace | client sends / day | client receives / day | client worst case / day (more of the two) | goodput cap | n | server sends / day | server receives / day |\n")
	fmt.Fprintf(&b, "| --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, iv := range costTablePaces {
		p := d
		p.RoundIntervalMs = iv
		c := GroupCost(p)
		pace := time.Duration(iv) * time.Millisecond
		for i, n := range costTableCrowds {
			s := ServerCost(p, n, 3)
			if i == 0 {
				fmt.Fprintf(&b, "| %v | %s | %s | %s | %s/s |", pace, FormatBytes(24*c.Idle.SendPerHour), FormatBytes(24*c.Idle.RecvPerHour),
					FormatBytes(24*3600*c.Worst.Max()), FormatBytes(float64(p.ChunkSize)/pace.Seconds()))
			} else {
				fmt.Fprintf(&b, "| | | | | |")
			}
			fmt.Fprintf(&b, " %d | %s | %s |\n", n, FormatBytes(24*s.SendPerHour), FormatBytes(24*s.RecvPerHour))
		}
	}
	return b.String()
}
