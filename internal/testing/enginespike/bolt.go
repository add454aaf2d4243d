package enginespike

import (
	"bytes"
	"context"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/hookline/hookline/internal/groupcommit"
)

// Bolt is bbolt as the embedded store uses it today: its options, and one
// fsynced write transaction per group of concurrent writers (at most 512,
// lingering up to 500µs for the callers of the previous group). bbolt
// syncs every commit, so outcomes are synced too.
type Bolt struct {
	db    *bolt.DB
	group *groupcommit.Batcher[func(*bolt.Tx) error, struct{}]

	mu  sync.Mutex
	pos []byte // the last due key leased
}

var bucket = []byte("q")

// OpenBolt opens a bbolt engine in the file path.
func OpenBolt(path string) (*Bolt, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return nil, err
	}
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists(bucket); return err }); err != nil {
		db.Close()
		return nil, err
	}
	b := &Bolt{db: db}
	b.group = groupcommit.New(b.commit, groupcommit.Options[func(*bolt.Tx) error]{MaxBatch: 512, Linger: 500 * time.Microsecond})
	return b, nil
}

// commit runs a group's writes in one transaction; a write that fails
// fails alone (its changes are not undone: the spike's writes do not fail).
func (b *Bolt) commit(calls []*groupcommit.Call[func(*bolt.Tx) error, struct{}]) {
	errs := make([]error, len(calls))
	err := b.db.Update(func(tx *bolt.Tx) error {
		for i, c := range calls {
			errs[i] = c.Req(tx)
		}
		return nil
	})
	for i, c := range calls {
		if err != nil {
			errs[i] = err
		}
		c.Answer(struct{}{}, errs[i])
	}
}

func (b *Bolt) update(ctx context.Context, fn func(*bolt.Tx) error) error {
	_, err := b.group.Do(ctx, fn)
	return err
}

// Enqueue implements Engine.
func (b *Bolt) Enqueue(ctx context.Context, j Job) error {
	return b.update(ctx, func(tx *bolt.Tx) error {
		q := tx.Bucket(bucket)
		if err := q.Put(eventKey(j.ID), j.Body); err != nil {
			return err
		}
		return q.Put(dueKey(j.Due, j.ID), nil)
	})
}

// Lease implements Engine.
func (b *Bolt) Lease(n int, now int64) ([]Job, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Job
	err := b.db.View(func(tx *bolt.Tx) error {
		q := tx.Bucket(bucket)
		c := q.Cursor()
		k, _ := c.Seek(b.pos)
		if b.pos == nil {
			k, _ = c.Seek([]byte("q/"))
		} else if bytes.Equal(k, b.pos) {
			k, _ = c.Next()
		}
		for ; k != nil && len(out) < n; k, _ = c.Next() {
			due, id, ok := dueOf(k)
			if !ok || due > now {
				break
			}
			out = append(out, Job{ID: id, Due: due, Body: bytes.Clone(q.Get(eventKey(id)))})
			b.pos = bytes.Clone(k)
		}
		return nil
	})
	return out, err
}

// Finish implements Engine.
func (b *Bolt) Finish(j Job) error {
	return b.update(context.Background(), func(tx *bolt.Tx) error {
		q := tx.Bucket(bucket)
		if err := q.Delete(dueKey(j.Due, j.ID)); err != nil {
			return err
		}
		return q.Put(outcomeKey(j.ID), []byte(`{"st":"delivered"}`))
	})
}

// Dead implements Engine.
func (b *Bolt) Dead(j Job) error {
	return b.update(context.Background(), func(tx *bolt.Tx) error {
		q := tx.Bucket(bucket)
		if err := q.Delete(dueKey(j.Due, j.ID)); err != nil {
			return err
		}
		return q.Put(deadKey(j.ID), j.Body)
	})
}

// Expire implements Engine: the event record and outcome of every
// delivered job, 10,000 a transaction.
func (b *Bolt) Expire() error {
	for {
		n := 0
		err := b.db.Update(func(tx *bolt.Tx) error {
			q := tx.Bucket(bucket)
			c := q.Cursor()
			for k, _ := c.Seek([]byte("f/")); k != nil && bytes.HasPrefix(k, []byte("f/")) && n < 10_000; k, _ = c.Seek([]byte("f/")) {
				if err := q.Delete(eventKey(string(k[2:]))); err != nil {
					return err
				}
				if err := c.Delete(); err != nil {
					return err
				}
				n++
			}
			return nil
		})
		if err != nil || n == 0 {
			return err
		}
	}
}

// Reclaim implements Engine: bbolt never shrinks its file (its free pages
// are reused, not given back).
func (b *Bolt) Reclaim() error { return nil }

// Close implements Engine.
func (b *Bolt) Close() error {
	b.group.Close()
	return b.db.Close()
}
