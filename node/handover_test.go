package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
	"github.com/riffle-net/riffle/node"
	"github.com/riffle-net/riffle/node/client"
	"github.com/riffle-net/riffle/node/nodetest"
)

// TestHandoverOnLeave (§5.4 v3): a client that leaves mid-epoch hands
// its primary cover onions for the rounds ahead, so its departure does
// not end the epoch W rounds later (before, the primary ended it: "a
// client left and its cover window is spent"). The others go on in the
// same epoch for well over W rounds after the leave, and the epoch ends
// only once the handed-over onions ran out, at S_0's round limit.
func TestHandoverOnLeave(t *testing.T) {
	t.Parallel()
	node.Virtual(t, func(t *testing.T) {
		if testing.Short() {
			t.Skip("runs a loopback network")
		}
		p := node.TestParams(64)
		p.RoundLimitMs = 300000 // a round waiting for the slot fails the test
		tn := nodetest.New(t, nodetest.Config{Network: node.VirtualNet(t), Servers: 3, Clients: 3, Params: p})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		leaver, err := tn.NewClient(ctx, 1, client.ClientConfig{Logger: nodetest.Logger()})
		if err != nil {
			t.Fatal(err)
		}
		stay := tn.Clients[0]
		// Wait until the leaver is in an epoch with the others and a few
		// rounds ran.
		if err := wait.Until(context.Background(), 60*time.Second, func() bool { return leaver.Stats().Rounds >= 3 }); err != nil {
			t.Fatal("the leaving client ran no rounds")
		}
		if err := leaver.Close(); err != nil {
			t.Fatal(err)
		}
		before := stay.Stats()
		// Well beyond W = 2 rounds, and within the 32 handed over.
		const beyond = 12
		if err := wait.Until(context.Background(), 60*time.Second, func() bool {
			now := stay.Stats()
			if now.Epochs != before.Epochs {
				t.Fatalf("the epoch ended %d rounds after a client left (want more than %d)", now.Rounds-before.Rounds, beyond)
			}
			return now.Rounds >= before.Rounds+beyond
		}); err != nil {
			t.Fatalf("only %d rounds in 60 s after the leave", stay.Stats().Rounds-before.Rounds)
		}
		// The onions run out: S_0 ends the epoch at the round limit (the
		// primary's word that its client left is no evidence:
		// departure.go), and the next forms without it.
		if err := wait.UntilEvery(context.Background(), time.Duration(p.RoundLimitMs)*time.Millisecond+90*time.Second, 50*time.Millisecond, func() bool { return stay.Stats().Epochs != before.Epochs }); err != nil {
			t.Fatal("the epoch did not end after the handed-over onions ran out")
		}
		if got := stay.Stats().Rounds - before.Rounds; got > 32+4 {
			t.Errorf("%d rounds after the leave: more than the handed-over onions cover", got)
		}
	})
}
