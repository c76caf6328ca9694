package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/blame"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/chargelog"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// Equivocation of one number (docs/protocol.md §3, "One certificate per
// number"): a server's signature of the final descriptor of N and its
// timeout signature of N. An honest server never signs both: it signs a
// final descriptor only of an epoch whose open descriptor it signed and
// holds, signs no open descriptor of a number whose timeout it signed, and
// no timeout of a number whose final descriptor it signed; the two marks
// are on disk before the signature leaves, so a restart keeps them. So
// the pair is evidence (wire.EvEquiv, blame.ChargeOf) charged to its
// signer. (An open and a timeout signature are not: an honest server
// signs the timeout of a number whose open descriptor it signed once the
// epoch ended there uncertified, TestOpenLostTimeoutCertified.)

// PhaseFile holds, in a data directory, the highest number whose timeout
// this server signed and the highest whose final descriptor it signed.
const PhaseFile = "phases"

// phaseMarks is what PhaseFile holds. Its own lock.
type phaseMarks struct {
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
func (pm *phaseMarks) load(dir string) {
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
	if _, serr := os.Stat(filepath.Join(dir, EpochNumberFile)); errors.Is(err, os.ErrNotExist) && errors.Is(serr, os.ErrNotExist) {
		pm.voted, pm.final = 0, 0 // a new data directory
		return
	}
	n, _ := certs.LoadNumber(dir)
	pm.voted, pm.final = n+1, n
}

// mark records that this server signs the timeout (final false) or the
// final descriptor (final true) of n, on disk first; it refuses when the
// other of the two of n was signed here.
func (s *Server) markPhase(n uint64, final bool) error {
	pm := &s.phase
	pm.mu.Lock()
	defer pm.mu.Unlock()
	pm.load(s.cfg.DataDir)
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
	if err := proto.WriteFileDurably(filepath.Join(s.cfg.DataDir, PhaseFile), fmt.Appendf(nil, "%d %d\n", voted, fin)); err != nil {
		return err
	}
	pm.voted, pm.final = voted, fin
	return nil
}

// timeoutSigned reports whether this server signed the timeout of n or a
// later number.
func (s *Server) timeoutSigned(n uint64) bool {
	pm := &s.phase
	pm.mu.Lock()
	defer pm.mu.Unlock()
	pm.load(s.cfg.DataDir)
	return n <= pm.voted
}

// errTimeoutSigned refuses an open descriptor of a number whose timeout
// this server signed.
var errTimeoutSigned = errors.New("node: the timeout of this number signed here")

// noteEquivocations logs, as evidence charged through the log, every
// server that signed both final and timeout (two certificates of one
// number, the timeout's signatures not yet checked), and relays it to
// the live servers. Never call with s.cert.mu held.
func (s *Server) noteEquivocations(final, timeout *wire.Cert) {
	ctx, err := blame.CertContext(final)
	if err != nil {
		return
	}
	evs, who := chargelog.Equivocations(final, timeout)
	for i, ev := range evs {
		grew, err := s.ref.LogCharge(ev, ctx, false)
		if err != nil {
			s.log.Debug("equivocation refused", "number", final.Number, "err", err)
			continue
		}
		if grew {
			s.log.Warn("a server signed the final descriptor of a number and its timeout", "peer", who[i].ShortString(), "number", final.Number)
			s.spreadCharge(ev, s.chain(), "")
		}
	}
}
