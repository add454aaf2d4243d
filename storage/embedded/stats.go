package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hookline/hookline/storage"
)

// statsKey is the minute (0: all-time) then the counter's storage.StatsField.
func statsKey(minute int64, source, name string) []byte {
	field := storage.StatsField(source, name)
	k := make([]byte, 8, 8+len(field))
	binary.BigEndian.PutUint64(k, uint64(minute))
	return append(k, field...)
}

// AddStats implements storage.Store.
func (s *Store) AddStats(ctx context.Context, at time.Time, deltas map[string]map[string]int64) error {
	minute := storage.StatsMinute(at)
	return s.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bStats)
		for source, m := range deltas {
			for name, d := range m {
				for _, k := range [][]byte{statsKey(0, source, name), statsKey(minute, source, name)} {
					var n int64
					if v := b.Get(k); len(v) == 8 {
						n = int64(binary.BigEndian.Uint64(v))
					}
					v := make([]byte, 8)
					binary.BigEndian.PutUint64(v, uint64(n+d))
					if err := b.Put(k, v); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
}

// Stats implements storage.Store.
func (s *Store) Stats(ctx context.Context, since time.Time) (map[string]map[string]int64, map[string]map[string]int64, error) {
	recent, all := map[string]map[string]int64{}, map[string]map[string]int64{}
	add := func(out map[string]map[string]int64, k, v []byte) {
		source, name, ok := storage.SplitStatsField(string(k[8:]))
		if !ok || len(v) != 8 {
			return
		}
		m := out[source]
		if m == nil {
			m = map[string]int64{}
			out[source] = m
		}
		m[name] += int64(binary.BigEndian.Uint64(v))
	}
	err := s.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bStats).Cursor()
		zero := make([]byte, 8)
		for k, v := c.First(); k != nil && bytes.HasPrefix(k, zero); k, v = c.Next() {
			add(all, k, v)
		}
		from := make([]byte, 8)
		binary.BigEndian.PutUint64(from, uint64(max(storage.StatsMinute(since), 1)))
		for k, v := c.Seek(from); k != nil; k, v = c.Next() {
			add(recent, k, v)
		}
		return nil
	})
	return recent, all, err
}

// sweepStats deletes minute buckets older than before (never the all-time ones).
func sweepStats(tx *bolt.Tx, before time.Time, max int) (int, error) {
	b := tx.Bucket(bStats)
	end := storage.StatsMinute(before)
	var keys [][]byte
	c := b.Cursor()
	first := make([]byte, 8)
	binary.BigEndian.PutUint64(first, 1)
	for k, _ := c.Seek(first); k != nil && len(keys) < max && int64(binary.BigEndian.Uint64(k[:8])) < end; k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}
