package enginespike

import (
	"bytes"
	"context"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/hookline/hookline/internal/groupcommit"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// Pebble is Pebble v2 with the queue's pattern: a job's record and due
// entry in one batch committed with Sync (Pebble's commit pipeline makes
// concurrent syncs share one WAL fsync), an outcome in a batch committed
// without a sync of its own (the next synced commit makes it durable), a
// dead letter synced; concurrent outcomes share a batch. A lease seeks past the last due key leased, so the
// tombstones of finished jobs behind it are never read.
type Pebble struct {
	db       *pebble.DB
	finishes *groupcommit.Batcher[Job, struct{}]

	mu  sync.Mutex
	pos []byte // the last due key leased
}

// OpenPebble opens a Pebble engine in the directory dir, with memtables
// of memtable bytes (0: Pebble's default, 4 MiB). A write-ahead log file is
// preallocated to about a memtable's size and recycled, so the memtable
// size is also disk kept whatever the data.
func OpenPebble(dir string, memtable uint64) (*Pebble, error) {
	cache := pebble.NewCache(64 << 20) // blocks read by leases stay cached (the default is 8 MiB)
	defer cache.Unref()                // the DB holds its own reference
	db, err := pebble.Open(dir, &pebble.Options{MemTableSize: memtable, Cache: cache, Logger: kv.Quiet{}})
	if err != nil {
		return nil, err
	}
	p := &Pebble{db: db}
	p.finishes = groupcommit.New(p.finishGroup, groupcommit.Options[Job]{MaxBatch: 512})
	return p, nil
}

// Enqueue implements Engine.
func (p *Pebble) Enqueue(ctx context.Context, j Job) error {
	b := p.db.NewBatch()
	defer b.Close()
	if err := b.Set(eventKey(j.ID), j.Body, nil); err != nil {
		return err
	}
	if err := b.Set(dueKey(j.Due, j.ID), nil, nil); err != nil {
		return err
	}
	return b.Commit(pebble.Sync)
}

// Lease implements Engine.
func (p *Pebble) Lease(n int, now int64) ([]Job, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lower := []byte("q/")
	if p.pos != nil {
		lower = append(bytes.Clone(p.pos), 0) // strictly after it
	}
	it, err := p.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: []byte("q0")})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []Job
	for ok := it.First(); ok && len(out) < n; ok = it.Next() {
		due, id, good := dueOf(it.Key())
		if !good || due > now {
			break
		}
		body, closer, err := p.db.Get(eventKey(id))
		if err != nil {
			return out, err
		}
		out = append(out, Job{ID: id, Due: due, Body: bytes.Clone(body)})
		closer.Close()
		p.pos = bytes.Clone(it.Key())
	}
	return out, it.Error()
}

// Finish implements Engine: the outcomes of concurrent workers share one
// batch, committed without a sync (as the finish batcher of the Redis
// store shares a round trip).
func (p *Pebble) Finish(j Job) error {
	_, err := p.finishes.Do(context.Background(), j)
	return err
}

// finishGroup commits a group's outcomes in one unsynced batch.
func (p *Pebble) finishGroup(calls []*groupcommit.Call[Job, struct{}]) {
	b := p.db.NewBatch()
	defer b.Close()
	var err error
	for _, c := range calls {
		if err = b.Delete(dueKey(c.Req.Due, c.Req.ID), nil); err != nil {
			break
		}
		if err = b.Set(outcomeKey(c.Req.ID), []byte(`{"st":"delivered"}`), nil); err != nil {
			break
		}
	}
	if err == nil {
		err = b.Commit(pebble.NoSync)
	}
	for _, c := range calls {
		c.Answer(struct{}{}, err)
	}
}

// Dead implements Engine.
func (p *Pebble) Dead(j Job) error {
	b := p.db.NewBatch()
	defer b.Close()
	if err := b.Delete(dueKey(j.Due, j.ID), nil); err != nil {
		return err
	}
	if err := b.Set(deadKey(j.ID), j.Body, nil); err != nil {
		return err
	}
	return b.Commit(pebble.Sync)
}

// Expire implements Engine: the event record and outcome of every
// delivered job deleted one key at a time (as retention finds them),
// 10,000 jobs a batch.
func (p *Pebble) Expire() error {
	it, err := p.db.NewIter(&pebble.IterOptions{LowerBound: []byte("f/"), UpperBound: []byte("f0")})
	if err != nil {
		return err
	}
	defer it.Close()
	b := p.db.NewBatch()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if err := b.Delete(eventKey(string(it.Key()[2:])), nil); err != nil {
			return err
		}
		if err := b.Delete(it.Key(), nil); err != nil {
			return err
		}
		if n++; n%10_000 == 0 {
			if err := b.Commit(pebble.NoSync); err != nil {
				return err
			}
			b.Close()
			b = p.db.NewBatch()
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return err
	}
	b.Close()
	return it.Error()
}

// Reclaim implements Engine: a manual compaction of the whole key space,
// which drops the deleted records and their tombstones.
func (p *Pebble) Reclaim() error {
	if err := p.db.Compact(context.Background(), []byte("\x00"), []byte("\xff"), true); err != nil {
		return err
	}
	return kv.FilesDeleted(context.Background(), p.db, false) // deleted in the background after the compaction
}

// Settle implements Settler.
func (p *Pebble) Settle() error { return kv.Settled(context.Background(), p.db) }

// Close implements Engine.
func (p *Pebble) Close() error {
	p.finishes.Close()
	return p.db.Close()
}
