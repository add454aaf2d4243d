package enginespike

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/hookline/hookline/internal/groupcommit"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// KV is the pattern through storage/embedded/kv, the bucket layer the
// embedded store's code would keep over Pebble: enqueues in one synced
// write transaction per group of concurrent writers (as the store's
// committer groups them), outcomes in one unsynced transaction per group,
// a dead letter synced. Lease seeks past the last due key leased, or, with
// scan, walks the due index from its start as the store's lease does
// today, skipping the jobs leased (kept in memory) and, on Pebble, the
// tombstones of every job finished since the last compaction.
type KV struct {
	db       *kv.DB
	enqueues *groupcommit.Batcher[func(*kv.Tx) error, struct{}]
	finishes *groupcommit.Batcher[func(*kv.Tx) error, struct{}]
	scan     bool

	mu     sync.Mutex
	pos    []byte          // the last due key leased (without scan)
	leased map[string]bool // due keys leased and not finished (with scan)
}

// OpenKV opens a kv engine in the directory dir.
func OpenKV(dir string, scan bool) (*KV, error) {
	db, err := kv.Open(dir, kv.Options{MemTable: 4 << 20}) // as measured in docs/benchmarks.md
	if err != nil {
		return nil, err
	}
	if err := db.Update(func(tx *kv.Tx) error { _, err := tx.CreateBucketIfNotExists(bucket); return err }); err != nil {
		db.Close()
		return nil, err
	}
	e := &KV{db: db, scan: scan, leased: map[string]bool{}}
	e.enqueues = groupcommit.New(func(calls []*groupcommit.Call[func(*kv.Tx) error, struct{}]) { e.commit(calls, db.Update) },
		groupcommit.Options[func(*kv.Tx) error]{MaxBatch: 512, Linger: 500 * time.Microsecond})
	e.finishes = groupcommit.New(func(calls []*groupcommit.Call[func(*kv.Tx) error, struct{}]) { e.commit(calls, db.UpdateUnsynced) },
		groupcommit.Options[func(*kv.Tx) error]{MaxBatch: 512})
	return e, nil
}

// commit runs a group's writes in one transaction of update.
func (e *KV) commit(calls []*groupcommit.Call[func(*kv.Tx) error, struct{}], update func(func(*kv.Tx) error) error) {
	err := update(func(tx *kv.Tx) error {
		for _, c := range calls {
			if err := c.Req(tx); err != nil {
				return err
			}
		}
		return nil
	})
	for _, c := range calls {
		c.Answer(struct{}{}, err)
	}
}

// Enqueue implements Engine.
func (e *KV) Enqueue(ctx context.Context, j Job) error {
	_, err := e.enqueues.Do(ctx, func(tx *kv.Tx) error {
		q := tx.Bucket(bucket)
		if err := q.Put(eventKey(j.ID), j.Body); err != nil {
			return err
		}
		return q.Put(dueKey(j.Due, j.ID), nil)
	})
	return err
}

// Lease implements Engine.
func (e *KV) Lease(n int, now int64) ([]Job, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Job
	err := e.db.View(func(tx *kv.Tx) error {
		q := tx.Bucket(bucket)
		c := q.Cursor()
		var k []byte
		switch {
		case e.scan || e.pos == nil:
			k, _ = c.Seek([]byte("q/"))
		default:
			if k, _ = c.Seek(e.pos); bytes.Equal(k, e.pos) {
				k, _ = c.Next()
			}
		}
		for ; k != nil && len(out) < n; k, _ = c.Next() {
			due, id, ok := dueOf(k)
			if !ok || due > now {
				break
			}
			if e.scan {
				if e.leased[string(k)] {
					continue
				}
				e.leased[string(k)] = true
			}
			out = append(out, Job{ID: id, Due: due, Body: q.Get(eventKey(id))})
			e.pos = k
		}
		return nil
	})
	return out, err
}

// Finish implements Engine.
func (e *KV) Finish(j Job) error {
	_, err := e.finishes.Do(context.Background(), func(tx *kv.Tx) error {
		q := tx.Bucket(bucket)
		if err := q.Delete(dueKey(j.Due, j.ID)); err != nil {
			return err
		}
		return q.Put(outcomeKey(j.ID), []byte(`{"st":"delivered"}`))
	})
	e.forget(j)
	return err
}

// Dead implements Engine.
func (e *KV) Dead(j Job) error {
	_, err := e.enqueues.Do(context.Background(), func(tx *kv.Tx) error {
		q := tx.Bucket(bucket)
		if err := q.Delete(dueKey(j.Due, j.ID)); err != nil {
			return err
		}
		return q.Put(deadKey(j.ID), j.Body)
	})
	e.forget(j)
	return err
}

// forget drops a finished job from the leased set.
func (e *KV) forget(j Job) {
	if e.scan {
		e.mu.Lock()
		delete(e.leased, string(dueKey(j.Due, j.ID)))
		e.mu.Unlock()
	}
}

// Expire implements Engine: every delivered job's records, 10,000 a
// transaction.
func (e *KV) Expire() error {
	for {
		var ids [][]byte
		err := e.db.View(func(tx *kv.Tx) error {
			c := tx.Bucket(bucket).Cursor()
			for k, _ := c.Seek([]byte("f/")); k != nil && bytes.HasPrefix(k, []byte("f/")) && len(ids) < 10_000; k, _ = c.Next() {
				ids = append(ids, k[2:])
			}
			return nil
		})
		if err != nil || len(ids) == 0 {
			return err
		}
		err = e.db.Update(func(tx *kv.Tx) error {
			q := tx.Bucket(bucket)
			for _, id := range ids {
				if err := q.Delete(eventKey(string(id))); err != nil {
					return err
				}
				if err := q.Delete(outcomeKey(string(id))); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
}

// Reclaim implements Engine: a manual compaction of the whole key space.
func (e *KV) Reclaim() error {
	if err := e.db.Engine().Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
		return err
	}
	return kv.FilesDeleted(context.Background(), e.db.Engine(), true) // deleted in the background after the compaction
}

// Settle implements Settler.
func (e *KV) Settle() error { return kv.Settled(context.Background(), e.db.Engine()) }

// Close implements Engine.
func (e *KV) Close() error {
	e.enqueues.Close()
	e.finishes.Close()
	return e.db.Close()
}
