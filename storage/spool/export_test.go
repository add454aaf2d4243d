package spool

import "github.com/hookline/hookline/storage/embedded/kv"

// PutRaw stores v as the record at seq, as a damaged disk might leave it.
func (s *Spool) PutRaw(seq uint64, v []byte) error {
	err := s.db.Update(func(tx *kv.Tx) error {
		if err := tx.Bucket(bEvents).Put(seqKey(seq), v); err != nil {
			return err
		}
		return addSize(tx, 1, int64(len(v)))
	})
	if err == nil {
		s.size.events.Add(1)
		s.size.bytes.Add(int64(len(v)))
	}
	return err
}
