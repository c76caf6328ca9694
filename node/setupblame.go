package node

import (
	"fmt"

	"github.com/riffle-net/riffle/internal/wire"
)

// nameBadStep names server k of e's chain, whose setup step (§4.2) is
// signed by it and does not parse or does not verify: the signed step
// is public evidence (§8) that any server can check against the
// descriptor and the earlier steps, so every honest server names it alike
// and the next epoch forms without it. A share fault the step proves is
// not this: it walks back to a client (blame.go).
func (s *Server) nameBadStep(e *sepoch, k int, st *wire.Step, err error) {
	s.name(e, 0, &culprit{server: k, slot: 0, why: fmt.Sprintf("setup step %d signed by it does not verify: %v", k, err)}, [][]byte{st.Marshal()})
}
