package embedded

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// RewriteAsLegacyDue turns the lane queue of the file at path back into the
// single due index of earlier versions (tests of the upgrade).
func RewriteAsLegacyDue(path string) error {
	db, err := kv.Open(path, kv.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Update(func(tx *kv.Tx) error {
		old, err := tx.CreateBucket(bLegacyDue)
		if err != nil {
			return err
		}
		if err := tx.Bucket(bQueue).ForEach(func(k, _ []byte) error {
			_, due, id, _ := splitDueKey(k)
			return old.Put(timeKey(due, id), nil)
		}); err != nil {
			return err
		}
		if err := tx.DeleteBucket(bQueue); err != nil {
			return err
		}
		_, err = tx.CreateBucket(bQueue)
		return err
	})
}

// CheckForTest checks the engine's levels (every table read, its
// checksums verified, its keys in order) and reads every bucket.
func (s *Store) CheckForTest() error {
	if err := s.db.Engine().CheckLevels(nil); err != nil {
		return err
	}
	_, err := s.Dump()
	return err
}

// FloorsForTest is the lanes the store remembers, with their floors.
func (s *Store) FloorsForTest() map[string][]byte {
	out := map[string][]byte{}
	for _, lf := range s.floors.list() {
		out[lf.lane] = lf.floor
	}
	return out
}

// Dump returns every key and value of every bucket (storagetest.Factory.Dump).
func (s *Store) Dump() ([][]byte, error) {
	var out [][]byte
	err := s.db.View(func(tx *kv.Tx) error {
		return tx.ForEach(func(name []byte, b *kv.Bucket) error {
			return dumpBucket(b, &out)
		})
	})
	return out, err
}

// dumpBucket appends the keys and values of b and of its sub-buckets to
// out.
func dumpBucket(b *kv.Bucket, out *[][]byte) error {
	if err := b.ForEach(func(k, v []byte) error {
		*out = append(*out, bytes.Clone(k), bytes.Clone(v))
		return nil
	}); err != nil {
		return err
	}
	return b.ForEachBucket(func(name []byte) error {
		*out = append(*out, bytes.Clone(name), nil)
		return dumpBucket(b.Bucket(name), out)
	})
}

// RewriteWithoutCounters makes the file at path what an earlier version
// left: no counters (bCounts), leased jobs marked with no value.
func RewriteWithoutCounters(path string) error {
	if err := ResetCounters(path); err != nil {
		return err
	}
	db, err := kv.Open(path, kv.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Update(func(tx *kv.Tx) error {
		var ids [][]byte
		_ = tx.Bucket(bInFlight).ForEach(func(k, _ []byte) error {
			ids = append(ids, bytes.Clone(k))
			return nil
		})
		for _, id := range ids {
			if err := tx.Bucket(bInFlight).Put(id, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// LeasesForTest lists the leased jobs: bInFlight's value, then the job's due keys.
func (s *Store) LeasesForTest() []string {
	var out []string
	_ = s.db.View(func(tx *kv.Tx) error {
		return tx.Bucket(bInFlight).ForEach(func(k, v []byte) error {
			line := string(k) + " " + fmt.Sprint(v)
			_ = tx.Bucket(bQueue).ForEach(func(qk, _ []byte) error {
				lane, due, id, _ := splitDueKey(qk)
				if bytes.Equal(id, k) {
					line += fmt.Sprintf(" | %s %v", lane, due.UnixNano())
				}
				return nil
			})
			out = append(out, line)
			return nil
		})
	})
	return out
}

// RewriteAsLegacyLease makes queued job id of the file at path a job an
// earlier version leased until until, as it wrote one: the record in
// flight with its token, its due key at the lease's end, and a bInFlight
// key (tests of the upgrade).
func RewriteAsLegacyLease(path, id, token string, until time.Time) error {
	db, err := kv.Open(path, kv.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Update(func(tx *kv.Tx) error {
		rec, err := getRecord(tx, []byte(id))
		if err != nil {
			return err
		}
		if rec == nil || rec.Status != storage.StatusQueued {
			return fmt.Errorf("job %s is not queued", id)
		}
		if err := deleteDue(tx, rec); err != nil {
			return err
		}
		lane := storage.LaneOf(&rec.Event)
		rec.Status, rec.Lease, rec.LeaseUntil, rec.Due = storage.StatusInFlight, token, until, until
		if err := putRecord(tx, rec); err != nil {
			return err
		}
		if err := putDue(tx, rec); err != nil {
			return err
		}
		v := binary.BigEndian.AppendUint64(nil, uint64(until.UnixNano()))
		return tx.Bucket(bInFlight).Put([]byte(id), append(v, lane...))
	})
}

// LegacyLeasesLeft counts the keys of bInFlight.
func (s *Store) LegacyLeasesLeft() (n int, err error) {
	err = s.db.View(func(tx *kv.Tx) error {
		n = tx.Bucket(bInFlight).KeyN()
		return nil
	})
	return n, err
}

// RewriteAsLegacyIDs gives the file at path the (source, event id) index of
// earlier versions (bIDs), as they wrote it: an entry beside each claim,
// for every event with a record. Claims listed in swept are deleted, as
// the claims sweep of those versions did once they expired.
func RewriteAsLegacyIDs(path string, swept ...string) error {
	db, err := kv.Open(path, kv.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Update(func(tx *kv.Tx) error {
		claims, ids := tx.Bucket(bClaims), tx.Bucket(bIDs)
		err := claims.ForEach(func(ck, v []byte) error {
			if !recordsLeft(tx, string(v[8:])) {
				return nil
			}
			return ids.Put(bytes.Clone(ck), bytes.Clone(v[8:]))
		})
		if err != nil {
			return err
		}
		for _, ck := range swept {
			if err := claims.Delete([]byte(ck)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Claims is every key of bClaims with its expiry, and the number of keys
// left in bIDs.
func (s *Store) Claims() (claims map[string]time.Time, legacy int, err error) {
	claims = map[string]time.Time{}
	err = s.view(func(tx *kv.Tx) error {
		if err := tx.Bucket(bClaims).ForEach(func(ck, v []byte) error {
			claims[string(ck)] = timeAt(v)
			return nil
		}); err != nil {
			return err
		}
		legacy = tx.Bucket(bIDs).KeyN()
		return nil
	})
	return claims, legacy, err
}

// SetTypeForTest rewrites the stored record of job id with event type typ,
// as a change by someone else than the job's lease holder would.
func (s *Store) SetTypeForTest(id, typ string) error {
	return s.db.Update(func(tx *kv.Tx) error {
		rec, err := getRecord(tx, []byte(id))
		if err != nil || rec == nil {
			return fmt.Errorf("record %s: %v", id, err)
		}
		rec.Type = typ
		return putRecord(tx, rec)
	})
}

// RewriteWithoutIndexValues empties the values of the DLQ and finished
// indexes of the file at path, as versions before index values wrote them
// (tests of the listings' fallback).
func RewriteWithoutIndexValues(path string) error {
	db, err := kv.Open(path, kv.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Update(func(tx *kv.Tx) error {
		for _, name := range [][]byte{bDLQIdx, bDone} {
			b := tx.Bucket(name)
			var keys [][]byte
			if err := b.ForEach(func(k, _ []byte) error { keys = append(keys, bytes.Clone(k)); return nil }); err != nil {
				return err
			}
			for _, k := range keys {
				if err := b.Put(k, nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// Compactions is how many times the cleanups compacted what they swept.
func (s *Store) Compactions() int64 { return s.compactions.Load() }

// Engine is the Pebble database under the store (tests measuring it).
func (s *Store) Engine() *pebble.DB { return s.db.Engine() }

// RewriteInBaseLanes moves every queued or waiting job of the file at
// path into its base lane (storage.BaseLane), as versions before tenants'
// shares queued them, and forgets that the shares were migrated (tests of
// the upgrade).
func RewriteInBaseLanes(path string) error {
	db, err := kv.Open(path, kv.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.Update(func(tx *kv.Tx) error {
		var keys [][]byte
		if err := tx.Bucket(bQueue).ForEach(func(k, _ []byte) error {
			keys = append(keys, bytes.Clone(k))
			return nil
		}); err != nil {
			return err
		}
		for _, k := range keys {
			lane, due, id, _ := splitDueKey(k)
			if base := storage.BaseLane(string(lane)); base != string(lane) {
				if err := queueRemove(tx, k); err != nil {
					return err
				}
				if err := queuePut(tx, dueKey(base, due, id)); err != nil {
					return err
				}
			}
		}
		waiting := map[string]string{}
		if err := tx.Bucket(bWaiting).ForEach(func(id, lane []byte) error {
			waiting[string(id)] = storage.BaseLane(string(lane))
			return nil
		}); err != nil {
			return err
		}
		for id, lane := range waiting {
			if err := waitingPut(tx, []byte(id), lane); err != nil {
				return err
			}
		}
		if meta := tx.Bucket(bMeta); meta != nil {
			return meta.Delete(tenantSharesDone)
		}
		return nil
	})
}

// PauseKeysForTest lists the keys of the pauses bucket and of the
// tenants' pauses bucket.
func (s *Store) PauseKeysForTest() (plain, tenants []string, err error) {
	err = s.view(func(tx *kv.Tx) error {
		for b, out := range map[string]*[]string{string(bPaused): &plain, string(bTenantPaused): &tenants} {
			if err := tx.Bucket([]byte(b)).ForEach(func(k, _ []byte) error {
				*out = append(*out, string(k))
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	return plain, tenants, err
}

// PutDueKeyForTest adds a due key of job id in lane at due to the queue
// (counted, as a queued job's is) without touching the job's record: an
// index key its record does not name.
func (s *Store) PutDueKeyForTest(lane string, due time.Time, id string) error {
	return s.db.Update(func(tx *kv.Tx) error { return queuePut(tx, dueKey(lane, due, []byte(id))) })
}

// DeleteDueKeyForTest removes the due key of job id in lane at due from
// the queue (and its count) without touching the job's record.
func (s *Store) DeleteDueKeyForTest(lane string, due time.Time, id string) error {
	return s.db.Update(func(tx *kv.Tx) error { return queueDelete(tx, dueKey(lane, due, []byte(id))) })
}

// DueKeysForTest is the queue's due keys of job id, as "lane@unixnano".
func (s *Store) DueKeysForTest(id string) ([]string, error) {
	var out []string
	err := s.db.View(func(tx *kv.Tx) error {
		return tx.Bucket(bQueue).ForEach(func(k, _ []byte) error {
			if lane, due, kid, ok := splitDueKey(k); ok && string(kid) == id {
				out = append(out, fmt.Sprintf("%s@%d", lane, due.UnixNano()))
			}
			return nil
		})
	})
	return out, err
}
