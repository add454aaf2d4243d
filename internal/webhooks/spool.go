package webhooks

import (
	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/spool"
)

// spoolOf is the spool of store st, under the app's own wrapping
// (encryption at rest), or nil: the store keeps none.
func spoolOf(st storage.Store) *spool.Spool {
	for st != nil {
		if s, ok := st.(interface{ Spool() *spool.Spool }); ok {
			return s.Spool()
		}
		u, ok := st.(interface{ Unwrap() storage.Store })
		if !ok {
			return nil
		}
		st = u.Unwrap()
	}
	return nil
}

// spoolInfo is what sp holds, as the stats report it.
func spoolInfo(sp *spool.Spool) *operator.SpoolInfo {
	s := sp.Stats()
	return &operator.SpoolInfo{Events: s.Events, Bytes: s.Bytes, Oldest: s.Oldest}
}
