package embedded

import (
	"bytes"
	"context"
	"encoding/binary"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// statsKey is the bucket index (minute or hour; 0: all-time) then the
// counter's storage.StatsField.
func statsKey(bucket int64, source, name string) []byte {
	field := storage.StatsField(source, name)
	k := make([]byte, 8, 8+len(field))
	binary.BigEndian.PutUint64(k, uint64(bucket))
	return append(k, field...)
}

// statsBucketOf is the bucket holding the counters of res.
func statsBucketOf(res storage.StatsResolution) []byte {
	if res == storage.StatsByHour {
		return bStatsH
	}
	return bStats
}

// int64Value encodes a counter.
func int64Value(n int64) []byte {
	v := make([]byte, 8)
	binary.BigEndian.PutUint64(v, uint64(n))
	return v
}

// addCounter adds d to the counter at k of b.
func addCounter(b *kv.Bucket, k []byte, d int64) error {
	var n int64
	if v := b.Get(k); len(v) == 8 {
		n = int64(binary.BigEndian.Uint64(v))
	}
	return b.Put(k, int64Value(n+d))
}

// maxCounter sets the counter at k of b to v when v is larger than it.
func maxCounter(b *kv.Bucket, k []byte, v int64) error {
	if cur := b.Get(k); len(cur) == 8 && int64(binary.BigEndian.Uint64(cur)) >= v {
		return nil
	}
	return b.Put(k, int64Value(v))
}

// AddStats implements storage.Store: the all-time totals, the minute and
// the hour bucket in one transaction, with the batch's ID when it has one
// (a batch applied already is not applied again).
func (s *Store) AddStats(ctx context.Context, batch storage.StatsBatch) error {
	minute, hour := storage.StatsMinute(batch.At), storage.StatsHour(batch.At)
	return s.update(ctx, func(tx *kv.Tx) error {
		if batch.ID != "" {
			ids := tx.Bucket(bStatsID)
			if ids.Get([]byte(batch.ID)) != nil {
				return nil // applied: its writer got no answer and sent it again
			}
			if err := ids.Put([]byte(batch.ID), int64Value(time.Now().UnixNano())); err != nil {
				return err
			}
		}
		b, h := tx.Bucket(bStats), tx.Bucket(bStatsH)
		for _, part := range []struct {
			deltas  map[string]map[string]int64
			allTime bool
		}{{batch.Counters, true}, {batch.Window, false}} {
			for source, m := range part.deltas {
				for name, d := range m {
					if part.allTime {
						if err := addCounter(b, statsKey(0, source, name), d); err != nil {
							return err
						}
					}
					if err := addCounter(b, statsKey(minute, source, name), d); err != nil {
						return err
					}
					if err := addCounter(h, statsKey(hour, source, name), d); err != nil {
						return err
					}
				}
			}
		}
		for source, m := range batch.Latest {
			for name, v := range m {
				if err := maxCounter(b, statsKey(0, source, name), v); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// SetStatsGauges implements storage.Store.
func (s *Store) SetStatsGauges(ctx context.Context, at time.Time, gauges map[string]map[string]int64) error {
	minute, hour := storage.StatsMinute(at), storage.StatsHour(at)
	return s.update(ctx, func(tx *kv.Tx) error {
		b, h := tx.Bucket(bStats), tx.Bucket(bStatsH)
		for source, m := range gauges {
			for name, v := range m {
				if err := b.Put(statsKey(minute, source, name), int64Value(v)); err != nil {
					return err
				}
				if err := h.Put(statsKey(hour, source, name), int64Value(v)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// addStatsField adds the counter at k (value v) to out, by source and name.
func addStatsField(out map[string]map[string]int64, k, v []byte) {
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

// Stats implements storage.Store.
func (s *Store) Stats(ctx context.Context, since time.Time) (map[string]map[string]int64, map[string]map[string]int64, error) {
	recent, all := map[string]map[string]int64{}, map[string]map[string]int64{}
	err := s.view(func(tx *kv.Tx) error {
		c := tx.Bucket(bStats).Cursor()
		zero := make([]byte, 8)
		for k, v := c.First(); k != nil && bytes.HasPrefix(k, zero); k, v = c.Next() {
			addStatsField(all, k, v)
		}
		from := make([]byte, 8)
		binary.BigEndian.PutUint64(from, uint64(max(storage.StatsMinute(since), 1)))
		for k, v := c.Seek(from); k != nil; k, v = c.Next() {
			addStatsField(recent, k, v)
		}
		return nil
	})
	return recent, all, err
}

// StatsBuckets implements storage.Store: one cursor walk over the range.
func (s *Store) StatsBuckets(ctx context.Context, res storage.StatsResolution, from, to time.Time) ([]storage.StatsBucket, error) {
	first, last, ok := storage.StatsBucketRange(res, from, to)
	if !ok {
		return nil, nil
	}
	var out []storage.StatsBucket
	err := s.view(func(tx *kv.Tx) error {
		c := tx.Bucket(statsBucketOf(res)).Cursor()
		start := make([]byte, 8)
		binary.BigEndian.PutUint64(start, uint64(first))
		for k, v := c.Seek(start); k != nil && len(k) >= 8; k, v = c.Next() {
			i := int64(binary.BigEndian.Uint64(k[:8]))
			if i > last {
				break
			}
			if len(out) == 0 || out[len(out)-1].Start != res.Start(i) {
				out = append(out, storage.StatsBucket{Start: res.Start(i), Counters: map[string]map[string]int64{}})
			}
			addStatsField(out[len(out)-1].Counters, k, v)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sweepStats deletes the minute and hour buckets past their retention at
// now (never the all-time totals) and the batch IDs older than
// storage.StatsBatchMemory, at most max keys.
func sweepStats(tx *kv.Tx, now time.Time, max int) (int, error) {
	n, err := sweepStatsBucket(tx.Bucket(bStats), storage.StatsMinute(now.Add(-storage.StatsRetention)), max)
	if err != nil || n >= max {
		return n, err
	}
	m, err := sweepStatsBucket(tx.Bucket(bStatsH), storage.StatsHour(now.Add(-storage.StatsHourRetention)), max-n)
	if err != nil || n+m >= max {
		return n + m, err
	}
	k, err := sweepStatsIDs(tx.Bucket(bStatsID), now.Add(-storage.StatsBatchMemory).UnixNano(), max-n-m)
	return n + m + k, err
}

// sweepStatsIDs deletes the batch IDs applied before cutoff (Unix ns), at
// most max. The bucket holds one ID per flush of the last hour (a flush
// every 2 s: about 1,800), so the scan stays small.
func sweepStatsIDs(b *kv.Bucket, cutoff int64, max int) (int, error) {
	var keys [][]byte
	c := b.Cursor()
	for k, v := c.First(); k != nil && len(keys) < max; k, v = c.Next() {
		if len(v) != 8 || int64(binary.BigEndian.Uint64(v)) < cutoff {
			keys = append(keys, bytes.Clone(k))
		}
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

// sweepStatsBucket deletes the keys of b's buckets 1 to end-1, at most max.
func sweepStatsBucket(b *kv.Bucket, end int64, max int) (int, error) {
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
