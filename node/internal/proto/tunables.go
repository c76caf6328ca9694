package proto

import (
	"reflect"
	"time"
)

// Tunables are a server's and a client's own timeouts, periods and back-off
// intervals: ServerConfig.Timing and ClientConfig.Timing. A zero field takes
// its default (DefaultTunables). They are for tests and embedders, not
// operators: a node with other values than its peers' behaves visibly
// differently from them (for a client, that sets it apart in its anonymity
// set, docs/anonymity.md).
//
// What stays a constant: the group constants of the descriptor (Params:
// round limit and interval, registration window); T_lead
// (ServerConfig.LeaderTimeout, §3); and the rules every peer must share,
// which a value of one node's own would break: the stream deadlines
// (shortTimeout, bulkTimeout, pollTimeout: both ends of a stream use them),
// the roster's helloEvery and rosterTTL (others judge a server live by its
// hellos), a client's state requests (StateEvery: one period for every
// client), dupwalk.Window (what a duplicate's clients are given). Also left:
// the bounds of tables (rosterForget), the re-check periods inside a wait
// (fractions of a second) and the periods of the lines a user reads
// (progressEvery).
type Tunables struct {
	// Server side.

	// CatchupEvery is the period of catch-up passes besides those at a
	// new certificate (catchup.go).
	CatchupEvery time.Duration
	// CatchupGap paces the lists and chunks a catch-up fetches.
	CatchupGap time.Duration
	// CatchupShun is how long a peer whose catch-up reply failed a check
	// is left alone.
	CatchupShun time.Duration
	// CertSyncEvery is how often an idle server asks a roster server for
	// certificates above its last (internal/certs sync.go).
	CertSyncEvery time.Duration
	// CertSyncStart is how often a server that just started asks, until a
	// roster server answered.
	CertSyncStart time.Duration
	// WouldServeTimeout bounds the question to a left-out server
	// (internal/wouldserve): well within the leader's Prepare timeout.
	WouldServeTimeout time.Duration
	// ClientReply bounds the send of every reply of the client and PIR
	// protocols, plus a second per clientReplyRate bytes (server.go): a
	// peer that asks and does not read holds the handler and any slot it
	// took no longer.
	ClientReply time.Duration
	// DupRouteWait bounds how long a duplicate walker asks a server for
	// its route (dupwalk.go).
	DupRouteWait time.Duration
	// RouteLinger is how long a setup walker keeps its epoch after the
	// walk, so that later walkers fetch its cached route (blame.go).
	RouteLinger time.Duration
	// WithdrawTTL is how long a leader leaves a server that withdrew out
	// of the chains it proposes (eligible.go).
	WithdrawTTL time.Duration
	// EvidenceBackoff is the wait after a first failed evidence delivery,
	// doubling up to EvidenceBackoffMax (internal/evidence).
	EvidenceBackoff    time.Duration
	EvidenceBackoffMax time.Duration
	// EpochWait bounds how long forwarded submissions wait for an epoch
	// S_0 has not finalised yet (intake.go).
	EpochWait time.Duration
	// EndGrace bounds how long a request for a round still in flight when
	// its epoch ended waits for the round's last parts.
	EndGrace time.Duration
	// LastRoundLinger is how long an epoch stays after its last round's
	// answers, for them to reach their clients (pirserve.go).
	LastRoundLinger time.Duration
	// LANRetry is how long a peer found on the LAN is not tried again;
	// LANHelloTimeout bounds one hello to it (transport's lan.go).
	LANRetry        time.Duration
	LANHelloTimeout time.Duration
	// OutsiderPoll is how long a poll of a peer without a slot may wait
	// (internal/peers, internal/polls).
	OutsiderPoll time.Duration
	// AbortSettle is how long a server that ended an epoch waits before
	// it signs its abort (internal/evidence).
	AbortSettle time.Duration
	// BlameStepWait bounds how long a server asked for its blame step
	// waits to learn of the blame; BlameStepTimeout one step's fetch
	// (package node/internal/roundblame).
	BlameStepWait    time.Duration
	BlameStepTimeout time.Duration
	// ServerProbe is how long a server that lost its last connection to a
	// roster server waits for its hello before it takes it for gone
	// (serverdown.go).
	ServerProbe time.Duration
	// WatchEvery is the period at which a server samples its roster and
	// epoch for its log (server_status.go).
	WatchEvery time.Duration
	// LeaderPoll is the period at which a server checks whether it leads
	// an epoch; LeaderRetry the wait after a failed one (leader.go).
	LeaderPoll  time.Duration
	LeaderRetry time.Duration

	// Client side.

	// HandoverTimeout bounds a leaving client's handing over of its cover
	// onions (handover.go).
	HandoverTimeout time.Duration
	// AttemptRetry is the least wait after a failed epoch attempt
	// (client.go).
	AttemptRetry time.Duration
}

// DefaultTunables are the values a zero Tunables field takes.
func DefaultTunables() Tunables {
	return Tunables{
		CatchupEvery:       time.Minute,
		CatchupGap:         20 * time.Millisecond,
		CatchupShun:        10 * time.Minute,
		CertSyncEvery:      5 * time.Second,
		CertSyncStart:      500 * time.Millisecond,
		WouldServeTimeout:  4 * time.Second,
		ClientReply:        2 * time.Second,
		DupRouteWait:       5 * time.Second,
		RouteLinger:        2 * time.Second,
		WithdrawTTL:        60 * time.Second,
		EvidenceBackoff:    250 * time.Millisecond,
		EvidenceBackoffMax: 8 * time.Second,
		EpochWait:          5 * time.Second,
		EndGrace:           2 * time.Second,
		LastRoundLinger:    2 * time.Second,
		LANRetry:           30 * time.Second,
		LANHelloTimeout:    5 * time.Second,
		OutsiderPoll:       60 * time.Second,
		AbortSettle:        time.Second,
		BlameStepWait:      5 * time.Second,
		BlameStepTimeout:   30 * time.Second,
		ServerProbe:        2 * time.Second,
		WatchEvery:         time.Second,
		LeaderPoll:         500 * time.Millisecond,
		LeaderRetry:        2 * time.Second,
		HandoverTimeout:    15 * time.Second,
		AttemptRetry:       500 * time.Millisecond,
	}
}

// WithDefaults returns t with every zero or negative field set to its
// default.
func (t Tunables) WithDefaults() Tunables {
	d := DefaultTunables()
	v, dv := reflect.ValueOf(&t).Elem(), reflect.ValueOf(d)
	for i := range v.NumField() {
		if v.Field(i).Int() <= 0 {
			v.Field(i).Set(dv.Field(i))
		}
	}
	return t
}
