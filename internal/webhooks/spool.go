package webhooks

import (
	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/spool"
)

// spoolStoreOf is the spooling store under st (the app's own wrapping,
// encryption at rest, unwrapped), or nil: the store keeps no spool.
func spoolStoreOf(st storage.Store) *spool.Store {
	s, _ := storage.As[*spool.Store](st)
	return s
}

// spoolOf is the spool of store st, or nil: none.
func spoolOf(st storage.Store) *spool.Spool {
	if s := spoolStoreOf(st); s != nil {
		return s.Spool()
	}
	return nil
}

// spoolInfo is what sp holds, as the stats report it.
func spoolInfo(sp *spool.Spool) *operator.SpoolInfo {
	s := sp.Stats()
	return &operator.SpoolInfo{Events: s.Events, Bytes: s.Bytes, Oldest: s.Oldest}
}
