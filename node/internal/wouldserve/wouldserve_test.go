package wouldserve

import (
	"context"
	"errors"
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/roster"
)

// TestAskedOnlyByRoster: a server that lost its records answers nobody,
// and the question is taken only from a roster server, before its body
// is read; a Prepare without a previous certificate leaves nobody out
// whom a server must ask.
func TestAskedOnlyByRoster(t *testing.T) {
	r := &roster.Table{}
	r.Saw("member", "", nil)
	lost := errors.New("records lost")
	sv := &Service{Roster: r, Lost: func() error { return lost }}
	if _, _, err := sv.OnWouldServe(context.Background(), "member", nil); !errors.Is(err, lost) {
		t.Fatalf("a server that lost its records answered: %v", err)
	}
	sv.Lost = func() error { return nil }
	if _, _, err := sv.OnWouldServe(context.Background(), "stranger", []byte{1}); err == nil {
		t.Fatal("a stranger's question answered")
	}
	if _, _, err := sv.OnWouldServe(context.Background(), "member", []byte{1}); err == nil {
		t.Fatal("a malformed question answered")
	}
	if err := sv.CheckLeftOut(&wire.Prepare{Number: 1}); err != nil {
		t.Fatalf("a first Prepare refused for a server left out: %v", err)
	}
}
