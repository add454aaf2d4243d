package embedded

import (
	"context"

	"github.com/hookline/hookline/storage/embedded/kv"
)

// UpdateForTest runs fn as one write of the group commit, as the Store's
// own methods do.
func (s *Store) UpdateForTest(ctx context.Context, fn func(*kv.Tx) error) error {
	return s.update(ctx, fn)
}

// QueuedWrites is how many writes wait for the next group commit.
func (s *Store) QueuedWrites() int { return s.c.b.Queued() }

// PutRawRecordForTest overwrites the stored record of event id with raw
// bytes (a corrupted or undecodable record).
func (s *Store) PutRawRecordForTest(id string, raw []byte) error {
	return s.db.Update(func(tx *kv.Tx) error {
		return tx.Bucket(bEvents).Put([]byte(id), raw)
	})
}
