package embedded

import (
	"bytes"
	"encoding/binary"
	"errors"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// The chains of ordered jobs (storage.ChainOf), written in the transaction
// of the job they change:
//
//	chains / <chain name> / sequence (8 bytes, big-endian) -> job id
//	waiting / job id -> lane: the chained jobs that are not their chain's
//	                          head (queued, in no due index)
//
// A chain's sub-bucket holds its jobs in the order they were accepted,
// the first one its head, and is removed once empty. Stores without
// ordered jobs have the two buckets, empty.
var (
	bChains  = []byte("chains")
	bWaiting = []byte("waiting")
)

// chainJob adds rec, a new job, to its chain, if it has one, and reports
// whether it must wait (its chain has a head already); a job that does not
// wait is queued due as usual.
func chainJob(tx *kv.Tx, rec *record) (wait bool, err error) {
	name := storage.ChainOf(&rec.Event)
	if name == "" {
		return false, nil
	}
	chain, err := tx.Bucket(bChains).CreateBucketIfNotExists([]byte(name))
	if err != nil {
		return false, err
	}
	first, _ := chain.Cursor().First()
	wait = first != nil
	seq, err := chain.NextSequence()
	if err != nil {
		return false, err
	}
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	if err := chain.Put(k[:], []byte(rec.ID)); err != nil {
		return false, err
	}
	if wait {
		return true, waitingPut(tx, []byte(rec.ID), storage.LaneOf(&rec.Event))
	}
	return false, nil
}

// chainHead returns the head of chain name and how many jobs it holds
// ("" and 0: none).
func chainHead(tx *kv.Tx, name string) (head string, n int) {
	if name == "" {
		return "", 0
	}
	chain := tx.Bucket(bChains).Bucket([]byte(name))
	if chain == nil {
		return "", 0
	}
	_, v := chain.Cursor().First()
	return string(v), chain.KeyN()
}

// popChain removes id from the head of chain name, if it is its head, and
// makes the next job of the chain due at now.
func popChain(tx *kv.Tx, name, id string, now time.Time) error {
	if name == "" {
		return nil
	}
	chains := tx.Bucket(bChains)
	chain := chains.Bucket([]byte(name))
	if chain == nil {
		return nil
	}
	k, v := chain.Cursor().First()
	if string(v) != id {
		return nil
	}
	if err := chain.Delete(k); err != nil {
		return err
	}
	_, next := chain.Cursor().First()
	if next == nil {
		return chains.DeleteBucket([]byte(name))
	}
	next = bytes.Clone(next)
	lane, err := waitingDelete(tx, next)
	if err != nil {
		return err
	}
	rec, err := getRecord(tx, next)
	if err != nil {
		// unreadable: due all the same, so that the lease that meets it
		// dead-letters it (poison) instead of it stalling its key unseen
		return queuePut(tx, dueKey(lane, now, next))
	}
	if rec == nil { // gone (never expected): the one after it goes instead
		return popChain(tx, name, string(next), now)
	}
	rec.Due = now
	if err := putRecord(tx, rec); err != nil {
		return err
	}
	return putDue(tx, rec)
}

// releaseEntry pops the delivery of DLQ entry e from its chain when it
// blocks it (its chain's head, dead or past retention: storage.HeadBlocks),
// letting the next job go at now: the entry was resolved, discarded or
// removed.
func releaseEntry(tx *kv.Tx, e *storage.DLQEntry, now time.Time) error {
	name := storage.ChainOfEntry(e)
	if head, _ := chainHead(tx, name); head == "" || head != e.ID {
		return nil
	}
	rec, err := getRecord(tx, []byte(e.ID))
	if err != nil {
		return err
	}
	st := storage.Status("")
	if rec != nil {
		st = rec.Status
	}
	if !storage.HeadBlocks(st) {
		return nil
	}
	return popChain(tx, name, e.ID, now)
}

// fillWaiting sets e.Waiting (storage.ChainWaiting) from its chain.
func fillWaiting(tx *kv.Tx, e *storage.DLQEntry) {
	head, n := chainHead(tx, storage.ChainOfEntry(e))
	e.Waiting = storage.ChainWaiting(e, head, n)
}

// errFound stops a walk that found what it looked for.
var errFound = errors.New("found")

// heldKey is the order key of the chain of lane whose head is id ("":
// none), for a job whose record cannot be decoded (poison). It walks the
// lane's chains: a rare path.
func heldKey(tx *kv.Tx, lane, id string) string {
	prefix := []byte(storage.ChainPrefix(lane))
	key := ""
	_ = tx.Bucket(bChains).ForEachBucket(func(name []byte) error {
		if !bytes.HasPrefix(name, prefix) {
			return nil
		}
		if head, _ := chainHead(tx, string(name)); head == id {
			key, _ = storage.OrderKeyOfChain(lane, string(name))
			return errFound
		}
		return nil
	})
	return key
}
