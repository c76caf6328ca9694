package client

import (
	"log/slog"

	"github.com/riffle-net/riffle/store"
)

// IndexEntry is one file of the index a client syncs (store.IndexEntry).
type IndexEntry = store.IndexEntry

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
