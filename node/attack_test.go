//go:build riffletest

package node

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/riffle-net/riffle/internal/wait"
)

// TestCorruptedCoverAnswerIsAttack (§6.3 v3): a primary that spoils every
// answer to one idle client (cover queries only) is reported to the user
// as a targeted attack; nothing goes to the servers, and the client goes
// on sending its queries.
func TestCorruptedCoverAnswerIsAttack(t *testing.T) {
	t.Parallel()
	virtual(t, func(t *testing.T) {
		var victim lockedBuf
		tn := startAnonNet(t, 3, 0, 2, testParams(16), func(i int, c *ServerConfig) {
			if i == 0 {
				c.observe = &testObserver{Corrupt: func([32]byte, uint32, uint32, int) bool { return true }}
			}
		})
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// The victim's primary is server 0, which spoils all its answers; the
		// other client's primary is honest.
		v, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[0].Addrs()[0].String(), Progress: &victim, Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		o, err := NewClient(ctx, ClientConfig{Network: testNet(t), MinAnonymity: 1, Now: true, Server: tn.servers[1].Addrs()[0].String(), Logger: anonLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		// Reported, and the victim goes on querying round after round.
		if err := wait.UntilEvery(ctx, time.Minute, 50*time.Millisecond, func() bool { st := v.Stats(); return st.CoverAttacks >= 8 && st.Rounds >= 8 }); err != nil {
			t.Fatalf("no attack reported: %+v\n%s", v.Stats(), victim.String())
		}
		if !strings.Contains(victim.String(), "targeted attack") {
			t.Fatalf("the user was not told: %s", victim.String())
		}
		if st := o.Stats(); st.BadAnswers != 0 || st.CoverAttacks != 0 {
			t.Fatalf("the client of an honest primary saw %+v", st)
		}
	})
}
