package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// The rekey (storage.Rekeyer) walks the partitions in order, each with
// SCAN on the node that holds its slot (every master of a Cluster in
// turn), and re-seals the records that can hold a payload: the event
// hashes' "ev" (jobs and events) and "pb" (a lone delivery's payload),
// the payload records (pl:), the fan-out records not yet expanded (fan:,
// whose tail is a payload record) and the DLQ entries' "json" (with the
// job of the same id, which a DLQ retry gives the entry's copy). Each
// record is written back by rekeySetScript only if it is still what was
// read (compare and set, in the record's slot), so a concurrent Finish,
// lease or erasure is never overwritten; a record that changed is read
// again; an operator's change to a DLQ entry does the same the other way
// (dlq.go, entryChanged). Its cursor is "<partition>:<SCAN cursor>"; its
// saved progress is the JSON of storage.RekeyProgress in
// {<prefix>:meta}:rekey.

// rekeySetScript writes a record back if it has not changed.
//
//	KEYS: the record's key
//	ARGV: hash field ("": the key is a string), the value read, the new value
//	returns 1 when written, 0 when the record changed (or is gone)
var rekeySetScript = redis.NewScript(`
if ARGV[1] == '' then
	if redis.call('GET', KEYS[1]) ~= ARGV[2] then return 0 end
	redis.call('SET', KEYS[1], ARGV[3], 'KEEPTTL')
	return 1
end
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
`)

func init() { retryable[rekeySetScript] = true } // compare and set: a second run changes nothing

// rekeyRetries bounds how often a record that keeps changing is read again.
const rekeyRetries = 5

func (s *Store) rekeyKey() string { return "{" + s.opts.Prefix + ":meta}:rekey" }

// RekeyBatch implements storage.Rekeyer.
func (s *Store) RekeyBatch(ctx context.Context, k *storage.Keyring, cursor string, n int) (storage.RekeyStep, error) {
	if !k.Enabled() {
		return storage.RekeyStep{}, storage.ErrNoKey
	}
	if err := s.CheckLayout(ctx); err != nil {
		return storage.RekeyStep{}, err
	}
	part, scan, err := parseRekeyCursor(cursor, len(s.parts))
	if err != nil {
		return storage.RekeyStep{}, err
	}
	var step storage.RekeyStep
	for step.Scanned < n {
		if part == len(s.parts) {
			step.Done = true
			break
		}
		p := s.parts[part]
		node, err := s.nodeOf(ctx, p)
		if err != nil {
			return step, unavailable(err)
		}
		keys, next, err := node.Scan(ctx, scan, p.tag+":*", int64(n)).Result()
		if err != nil {
			return step, unavailable(err)
		}
		for _, key := range keys {
			if err := s.rekeyKey1(ctx, k, p, key, &step); err != nil {
				return step, err
			}
		}
		scan = next
		if scan == 0 {
			part++
		}
	}
	step.Next = strconv.Itoa(part) + ":" + strconv.FormatUint(scan, 10)
	return step, nil
}

// nodeOf is the client that holds partition p's slot (SCAN runs on one
// node).
func (s *Store) nodeOf(ctx context.Context, p partition) (redis.Cmdable, error) {
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		return cc.MasterForKey(ctx, p.tag)
	}
	return s.c, nil
}

// sealedField is a value of a record that can hold a payload: the hash
// field ("": the key is a string) and how to re-seal it (false: nothing
// to change).
type sealedField struct {
	field  string
	reseal func(old string) (string, bool, error)
}

// rekeyKey1 re-seals the record at key, if it is one that can hold a
// payload: each of its sealed fields.
func (s *Store) rekeyKey1(ctx context.Context, k *storage.Keyring, p partition, key string, step *storage.RekeyStep) error {
	rest := strings.TrimPrefix(key, p.tag+":")
	kind, id, named := strings.Cut(rest, ":")
	if !named {
		return nil // a partition's index or counter (":fan", ":lanes"...)
	}
	payload := func(old string) (string, bool, error) {
		b, err := k.ResealPayload(storage.PayloadID(id), []byte(old))
		return string(b), b != nil, err
	}
	job := sealedField{"ev", func(old string) (string, bool, error) {
		var ev storage.Event
		if json.Unmarshal([]byte(old), &ev) != nil {
			return "", false, nil // a poison record: Lease dead-letters it
		}
		changed, err := k.ResealEvent(&ev)
		if err != nil || !changed {
			return "", false, err
		}
		b, err := json.Marshal(&ev)
		return string(b), true, err
	}}
	var fields []sealedField
	switch kind {
	case "ev":
		// the job's JSON, and a lone delivery's payload (enqueueScript)
		fields = []sealedField{job, {"pb", payload}}
	case "dlq":
		fields = []sealedField{{"json", func(old string) (string, bool, error) {
			var e storage.DLQEntry
			if json.Unmarshal([]byte(old), &e) != nil {
				return "", false, nil
			}
			changed, err := k.ResealEntry(&e)
			if err != nil || !changed {
				return "", false, err
			}
			b, err := json.Marshal(&e)
			return string(b), true, err
		}}}
	case "pl":
		fields = []sealedField{{"", payload}}
	case "fan":
		// a fan-out record not yet expanded: its payload record is its tail
		fields = []sealedField{{"", func(old string) (string, bool, error) {
			at, ok := fanPayloadAt(old)
			if !ok {
				return "", false, nil // unreadable: the lease drops it (expandFan)
			}
			nv, changed, err := payload(old[at:])
			if err != nil || !changed {
				return "", false, err
			}
			return old[:at] + nv, true, nil
		}}}
	default:
		return nil // an index, a queue, a claim: no payload
	}
	step.Scanned++
	for _, f := range fields {
		if err := s.rekeyField(ctx, p, key, f, step); err != nil {
			return err
		}
	}
	switch kind {
	case "fan":
		// a lease may have expanded the record before it was re-sealed,
		// into a payload record this scan may not meet (created after it
		// began): re-seal that too (one written after the record was
		// re-sealed holds the new seal already)
		return s.rekeyField(ctx, p, p.payload(id), sealedField{"", payload}, step)
	case "dlq":
		// a DLQ retry since the scan passed the job's hash gave the job
		// the entry's copy as it was then, sealed under the old key: re-seal
		// the job too (a retry after this takes the entry's new seal)
		// (a job whose key is missing is counted failed with its own hash)
		return s.rekeyField(ctx, p, p.ev(id), sealedField{"ev", func(old string) (string, bool, error) {
			nv, changed, err := job.reseal(old)
			return nv, changed && err == nil, nil
		}}, step)
	}
	return nil
}

// rekeyField re-seals field f of the record at key, reading it again when
// it changed meanwhile.
func (s *Store) rekeyField(ctx context.Context, p partition, key string, f sealedField, step *storage.RekeyStep) error {
	for range rekeyRetries {
		var old string
		var err error
		if f.field == "" {
			old, err = s.c.Get(ctx, key).Result()
		} else {
			old, err = s.c.HGet(ctx, key, f.field).Result()
		}
		if errors.Is(err, redis.Nil) {
			return nil // removed meanwhile, or not in this record
		}
		if err != nil {
			return unavailable(err)
		}
		nv, changed, err := f.reseal(old)
		if err != nil {
			step.Failed++
			step.FailedError = fmt.Errorf("%s: %w", key, err)
			return nil
		}
		if !changed {
			return nil
		}
		v, err := s.run(ctx, p, rekeySetScript, []string{key}, f.field, old, nv)
		if err != nil {
			return unavailable(err)
		}
		if n, _ := v.(int64); n == 1 {
			step.Resealed++
			return nil
		}
		// changed since it was read: read it again
	}
	return fmt.Errorf("%w: record %s kept changing during the rekey", storage.ErrUnavailable, key)
}

func parseRekeyCursor(cursor string, parts int) (part int, scan uint64, err error) {
	if cursor == "" {
		return 0, 0, nil
	}
	ps, ss, ok := strings.Cut(cursor, ":")
	part, err1 := strconv.Atoi(ps)
	scan, err2 := strconv.ParseUint(ss, 10, 64)
	if !ok || err1 != nil || err2 != nil || part < 0 || part > parts {
		return 0, 0, errors.New("invalid rekey cursor")
	}
	return part, scan, nil
}

// RekeyState implements storage.Rekeyer.
func (s *Store) RekeyState(ctx context.Context) (storage.RekeyProgress, error) {
	var p storage.RekeyProgress
	v, err := s.c.Get(ctx, s.rekeyKey()).Result()
	if errors.Is(err, redis.Nil) {
		return p, nil
	}
	if err != nil {
		return p, unavailable(err)
	}
	return p, json.Unmarshal([]byte(v), &p)
}

// SaveRekeyState implements storage.Rekeyer.
func (s *Store) SaveRekeyState(ctx context.Context, p storage.RekeyProgress) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return unavailable(s.c.Set(ctx, s.rekeyKey(), b, 0).Err())
}
