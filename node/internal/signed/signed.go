// Package signed is what a server keeps of what it signed, so that it
// never signs two things of one number that certify a fork
// (docs/protocol.md §3, "One certificate per number" and "Lost records"):
//
//   - Marks: the highest number whose timeout it signed and the highest
//     whose final descriptor it signed, on disk before the signature
//     leaves (PhaseFile), so that it never signs both of one number (the
//     pair is evidence of equivocation, charged to its signer).
//   - Amnesia: a server whose identity is there but whose records are
//     not signs nothing until the group's log has moved past its window.
//
// Each has its own lock, a leaf; Marks does no I/O but its file, Amnesia
// none but what its loop is given. Network-free tests.
package signed

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Equivocation of one number (§3, "One certificate per number"): a
// server's signature of the final descriptor of N and its timeout
// signature of N. An honest server never signs both: it signs a final
// descriptor only of an epoch whose open descriptor it signed and holds,
// signs no open descriptor of a number whose timeout it signed, and no
// timeout of a number whose final descriptor it signed; the two marks are
// on disk before the signature leaves, so a restart keeps them. (An open
// and a timeout signature are not a pair: an honest server signs the
// timeout of a number whose open descriptor it signed once the epoch
// ended there uncertified, TestOpenLostTimeoutCertified.)

// PhaseFile holds, in a data directory, the highest number whose timeout
// this server signed and the highest whose final descriptor it signed.
const PhaseFile = "phases"

// Marks is what PhaseFile holds. Its own lock.
type Marks struct {
	mu     sync.Mutex
	loaded bool
	voted  uint64 // the highest number whose timeout was signed here
	final  uint64 // the highest number whose final descriptor was signed here
}

// load reads the marks once. A data directory without them that has
// signed epochs (an upgrade from before the marks), or whose file cannot
// be read, takes the most a server of its epoch number can have signed:
// the timeout of the next number and the final descriptor of its own, so
// it signs neither again rather than risk the pair (one number lost).
// Call with pm.mu held.
func (pm *Marks) load(dir string) {
	if pm.loaded {
		return
	}
	pm.loaded = true
	b, err := os.ReadFile(filepath.Join(dir, PhaseFile))
	if err == nil {
		if _, err := fmt.Sscanf(string(b), "%d %d", &pm.voted, &pm.final); err == nil {
			return
		}
	}
	if _, serr := os.Stat(filepath.Join(dir, certs.NumberFile)); errors.Is(err, os.ErrNotExist) && errors.Is(serr, os.ErrNotExist) {
		pm.voted, pm.final = 0, 0 // a new data directory
		return
	}
	n, _ := certs.LoadNumber(dir)
	pm.voted, pm.final = n+1, n
}

// Load reads the marks of dir now (at start: read later, they would see
// the epoch number this run wrote and take it for an upgrade's).
func (pm *Marks) Load(dir string) {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	pm.load(dir)
}

// Mark records that this server signs the timeout (final false) or the
// final descriptor (final true) of n, in dir first; it refuses when the
// other of the two of n was signed here.
func (pm *Marks) Mark(dir string, n uint64, final bool) error {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	pm.load(dir)
	voted, fin := pm.voted, pm.final
	if final {
		if n <= voted {
			return fmt.Errorf("node: the timeout of %d signed here", n)
		}
		fin = max(fin, n)
	} else {
		if n <= fin {
			return fmt.Errorf("node: the final descriptor of %d signed here", n)
		}
		voted = max(voted, n)
	}
	if voted == pm.voted && fin == pm.final {
		return nil
	}
	if err := proto.WriteFileDurably(filepath.Join(dir, PhaseFile), fmt.Appendf(nil, "%d %d\n", voted, fin)); err != nil {
		return err
	}
	pm.voted, pm.final = voted, fin
	return nil
}

// TimeoutSigned reports whether this server signed the timeout of n or a
// later number.
func (pm *Marks) TimeoutSigned(dir string, n uint64) bool {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	pm.load(dir)
	return n <= pm.voted
}

// ErrTimeoutSigned refuses an open descriptor of a number whose timeout
// this server signed.
var ErrTimeoutSigned = errors.New("node: the timeout of this number signed here")

// A server that lost its records (§3, "Lost records"): its identity is
// there but no certificate nor epoch number is, so it no longer knows what
// it signed. Were it to sign again, it could sign a second entry of a
// number it already signed (a founder re-signing number 1 over a chain a
// corrupt founder proposes) and certify a fork. It signs nothing (no
// Prepare, final descriptor, timeout, attestation, would-serve, nor a turn
// as leader) until the log has moved past its window: once it has caught
// up to the group's newest certificate T, a certificate of T+1 made
// without it; or, if the group has none, once more than half of the
// founders other than itself say they hold none.

// ErrLostRecords is the refusal of a server that lost its records.
var ErrLostRecords = errors.New("node: this server lost its records: it signs nothing until the group's log moves past its window")

// Amnesia is on while the server signs nothing; until is the number
// whose certificate ends it (math.MaxUint64 while unknown).
type Amnesia struct {
	mu    sync.Mutex
	on    bool
	until uint64
	log   *slog.Logger
}

// Start turns the amnesia on: the number that ends it is not known yet.
func (a *Amnesia) Start(log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.on, a.until, a.log = true, math.MaxUint64, log
}

// Lost is ErrLostRecords while this server signs nothing, top the
// highest number certified here.
func (a *Amnesia) Lost(top uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.on {
		return nil
	}
	if a.until != math.MaxUint64 && top >= a.until {
		a.on = false
		a.log.Info("records lost: the log moved past this server's window, it signs again", "number", a.until)
		return nil
	}
	return ErrLostRecords
}

// Loop ends the amnesia as the package comment says, checking every
// every: top is the highest number certified here, holdNone whether the
// founders hold no certificate (FoundersHoldNone). Only for a group with
// founders.
func (a *Amnesia) Loop(ctx context.Context, every time.Duration, top func() uint64, holdNone func(context.Context) bool) {
	for {
		if a.Lost(top()) == nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		if t := top(); t > 0 {
			a.mu.Lock()
			if a.until == math.MaxUint64 {
				a.until = t + 1
				a.log.Warn("records lost: caught up, signing nothing until the next number is certified", "number", t+1)
			}
			a.mu.Unlock()
			continue
		}
		if holdNone(ctx) {
			a.mu.Lock()
			a.on = false
			a.mu.Unlock()
			a.log.Info("records lost: the founders hold no certificate, this server signs again")
			return
		}
	}
}

// FoundersHoldNone reports, of the founders' replies to a request for
// their certificates from number 1 (nil: none), whether more than half of
// the others founders answered with none, and none answered with any.
func FoundersHoldNone(reps [][]byte, others int) bool {
	none := 0
	for _, rep := range reps {
		if rep == nil {
			continue
		}
		var page wire.Certs
		if page.Unmarshal(rep) != nil {
			continue
		}
		if len(page.Certs) > 0 {
			return false // the certificate loop takes them
		}
		none++
	}
	return 2*none > others
}
