package embedded

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// The rekey (storage.Rekeyer) walks bEvents (jobs and events, and the
// payload records beside them), then bDLQ, in key order, each batch in one
// write transaction: nothing else writes while it reads and re-seals, so
// what it writes back is what it read, re-sealed. Its cursor is the last
// key of a batch: "e:<key>" in bEvents, "d:<key>" in bDLQ (base64). Its
// saved progress is the JSON of storage.RekeyProgress under bMeta's
// "rekey", a bucket made on first use. The last batch marks every record
// for a scrub (scrub.go) and the rekey is done once no file of the engine
// holds the records' earlier versions.
var bMeta = []byte("meta")

var rekeyStateKey = []byte("rekey")

// RekeyBatch implements storage.Rekeyer.
func (s *Store) RekeyBatch(ctx context.Context, k *storage.Keyring, cursor string, n int) (storage.RekeyStep, error) {
	if !k.Enabled() {
		return storage.RekeyStep{}, storage.ErrNoKey
	}
	bucket, after, err := parseRekeyCursor(cursor)
	if err != nil {
		return storage.RekeyStep{}, err
	}
	var step storage.RekeyStep
	err = s.update(ctx, func(tx *kv.Tx) error {
		// the records it re-seals leave their old versions to the scrub:
		// none kept by a snapshot (scrub.go)
		tx.Scrubbing()
		step = storage.RekeyStep{} // the write may run again
		b, last := bucket, after
		for step.Scanned < n {
			writes, next, err := rekeyBucket(tx, k, b, last, n-step.Scanned, &step)
			if err != nil {
				return err
			}
			if err := applyRekey(tx, b, writes); err != nil {
				return err
			}
			if next != nil {
				step.Next = formatRekeyCursor(b, next)
				continue // the batch is full, or goes on in this bucket
			}
			if b == "d" {
				// the old versions of what it re-sealed (in clear, or
				// under an older key) are still in the engine's files:
				// scrubbed as an erasure's, crash-safe by the same mark
				step.Done = true
				return markScrub(tx, recordSpans...)
			}
			b, last = "d", nil // on to the DLQ
			step.Next = "d:"
		}
		return nil
	})
	if err == nil && step.Done {
		err = s.scrub(ctx)
	}
	return step, err
}

// rekeyWrite is one record to write back.
type rekeyWrite struct {
	key, value []byte
	entry      *storage.DLQEntry // bDLQ: written with putEntry
}

// rekeyBucket re-seals up to n records of bucket b ("e" or "d") after key
// last (nil: from the first) into writes, applied once the cursor is done
// (a cursor does not see its bucket change). next is the last key
// read when the walk stopped because n records were read, nil at the end
// of the bucket.
func rekeyBucket(tx *kv.Tx, k *storage.Keyring, b string, last []byte, n int, step *storage.RekeyStep) (writes []rekeyWrite, next []byte, err error) {
	name := bEvents
	if b == "d" {
		name = bDLQ
	}
	c := tx.Bucket(name).Cursor()
	key, v := c.First()
	if last != nil {
		key, v = c.Seek(last)
		if key != nil && bytes.Equal(key, last) {
			key, v = c.Next()
		}
	}
	read := 0
	for ; key != nil; key, v = c.Next() {
		if read == n {
			return writes, next, nil
		}
		read++
		step.Scanned++
		next = bytes.Clone(key)
		w, changed, err := rekeyRecord(k, b, next, v)
		if err != nil {
			step.Failed++
			step.FailedError = err
			continue
		}
		if changed {
			step.Resealed++
			writes = append(writes, w)
		}
		if b == "d" {
			// a DLQ retry since the walk passed the job's record gave the
			// job the entry's copy as it was then, sealed under the old
			// key: re-seal the job too (a retry after this batch takes the
			// entry's new seal)
			if jv := tx.Bucket(bEvents).Get(next); jv != nil {
				// (a job whose key is missing is counted failed with its
				// own record)
				if w, changed, err := rekeyRecord(k, "e", next, jv); err == nil && changed {
					step.Resealed++
					writes = append(writes, w)
				}
			}
		}
	}
	return writes, nil, nil
}

// rekeyRecord is the record key of bucket b, of value v, re-sealed.
func rekeyRecord(k *storage.Keyring, b string, key, v []byte) (rekeyWrite, bool, error) {
	switch {
	case b == "d":
		e := new(storage.DLQEntry)
		if json.Unmarshal(v, e) != nil {
			return rekeyWrite{}, false, nil // left to whoever reads it
		}
		changed, err := k.ResealEntry(e)
		return rekeyWrite{entry: e}, changed, err
	case bytes.HasSuffix(key, []byte{0}): // a payload record (payloadKey)
		nv, err := k.ResealPayload(string(key[:len(key)-1]), v)
		return rekeyWrite{key: key, value: nv}, nv != nil, err
	}
	rec := new(record)
	if json.Unmarshal(v, rec) != nil {
		return rekeyWrite{}, false, nil // a poison record: Lease dead-letters it
	}
	changed, err := k.ResealEvent(&rec.Event)
	if err != nil || !changed {
		return rekeyWrite{}, false, err
	}
	nv, err := json.Marshal(rec)
	return rekeyWrite{key: key, value: nv}, true, err
}

func applyRekey(tx *kv.Tx, b string, writes []rekeyWrite) error {
	for _, w := range writes {
		var err error
		if w.entry != nil {
			err = putEntry(tx, w.entry)
		} else {
			err = tx.Bucket(bEvents).Put(w.key, w.value)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func formatRekeyCursor(b string, key []byte) string {
	return b + ":" + base64.RawURLEncoding.EncodeToString(key)
}

func parseRekeyCursor(cursor string) (bucket string, after []byte, err error) {
	if cursor == "" {
		return "e", nil, nil
	}
	b, enc, ok := strings.Cut(cursor, ":")
	if !ok || (b != "e" && b != "d") {
		return "", nil, fmt.Errorf("invalid rekey cursor")
	}
	after, err = base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return "", nil, fmt.Errorf("invalid rekey cursor")
	}
	if len(after) == 0 {
		after = nil
	}
	return b, after, nil
}

// RekeyState implements storage.Rekeyer.
func (s *Store) RekeyState(ctx context.Context) (storage.RekeyProgress, error) {
	var p storage.RekeyProgress
	_, err := s.getMeta(rekeyStateKey, &p)
	return p, err
}

// SaveRekeyState implements storage.Rekeyer.
func (s *Store) SaveRekeyState(ctx context.Context, p storage.RekeyProgress) error {
	return s.putMeta(ctx, rekeyStateKey, p)
}

// getMeta decodes the JSON value of key in bMeta into v (found false, v
// untouched: no such key).
func (s *Store) getMeta(key []byte, v any) (found bool, err error) {
	err = s.view(func(tx *kv.Tx) error {
		b := tx.Bucket(bMeta)
		if b == nil {
			return nil
		}
		if raw := b.Get(key); raw != nil {
			found = true
			return json.Unmarshal(raw, v)
		}
		return nil
	})
	return found, err
}

// putMeta sets key in bMeta to v as JSON.
func (s *Store) putMeta(ctx context.Context, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.update(ctx, func(tx *kv.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bMeta)
		if err != nil {
			return err
		}
		return b.Put(key, raw)
	})
}
