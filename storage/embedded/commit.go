package embedded

import (
	"context"
	"fmt"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/hookline/hookline/storage"
)

// maxGroup caps how many writes share one transaction.
const maxGroup = 512

// op is one write waiting for a commit. fn may run more than once: when one
// write of a shared transaction fails, the transaction is rolled back and
// the others run again together, without it. fn never runs again once its
// caller has stopped waiting (see abandon).
type op struct {
	fn   func(*bolt.Tx) error
	done chan error // buffered: answering never blocks the committer

	mu   sync.Mutex // held while fn runs, so that abandon waits for it
	gone bool       // the caller stopped waiting: fn must not run again
}

// run runs fn in tx, unless the caller has gone. A panic in fn is fn's
// error: the transaction is rolled back and only this write fails.
func (o *op) run(tx *bolt.Tx) (err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.gone {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = storage.Recovered(r)
		}
	}()
	return o.fn(tx)
}

// abandon makes sure fn never runs again. Once it returns, whatever fn
// wrote into its caller's variables is visible to the caller and will not
// change anymore.
func (o *op) abandon() {
	o.mu.Lock()
	o.gone = true
	o.mu.Unlock()
}

// committer implements group commit: the first waiting write is committed
// at once, and every write that arrives while that commit (and its fsync)
// is in progress shares the next one. A lone request never waits for a
// timer, and under load one fsync covers hundreds of events.
type committer struct {
	db   *bolt.DB
	ops  chan *op
	quit chan struct{}
	done chan struct{}
	// beforeCommit (Options.BeforeCommit) runs after a batch's writes,
	// before its transaction commits; nil in production.
	beforeCommit func(writes int) error
}

func newCommitter(db *bolt.DB, beforeCommit func(int) error) *committer {
	c := &committer{db: db, ops: make(chan *op, maxGroup), quit: make(chan struct{}), done: make(chan struct{}),
		beforeCommit: beforeCommit}
	go c.loop()
	return c
}

// unavailableCtx is what a writer whose context ended before its commit
// was confirmed gets: the write may still be committed later, but the
// caller must not report it stored.
func unavailableCtx(ctx context.Context) error {
	return fmt.Errorf("%w: write not confirmed: %w", storage.ErrUnavailable, ctx.Err())
}

// update runs fn in a durable write transaction shared with other writers.
// It returns when the transaction is committed, or when ctx ends: a stalled
// disk never holds a caller beyond its deadline.
func (c *committer) update(ctx context.Context, fn func(*bolt.Tx) error) error {
	if ctx.Err() != nil {
		return unavailableCtx(ctx)
	}
	o := &op{fn: fn, done: make(chan error, 1)}
	select {
	case c.ops <- o:
	case <-c.quit:
		return errClosed
	case <-ctx.Done():
		return unavailableCtx(ctx) // never queued: never runs
	}
	select {
	case err := <-o.done:
		return err
	case <-ctx.Done():
		o.abandon()
		// answered meanwhile: that answer stands
		select {
		case err := <-o.done:
			return err
		default:
			return unavailableCtx(ctx)
		}
	case <-c.done:
		// the loop ended; it may or may not have answered this op
		select {
		case err := <-o.done:
			return err
		default:
			return errClosed
		}
	}
}

func (c *committer) loop() {
	defer close(c.done)
	batch := make([]*op, 0, maxGroup)
	for {
		select {
		case o := <-c.ops:
			batch = append(batch[:0], o)
		case <-c.quit:
			// fail whatever is still queued
			for {
				select {
				case o := <-c.ops:
					o.done <- errClosed
				default:
					return
				}
			}
		}
	drain:
		for len(batch) < maxGroup {
			select {
			case o := <-c.ops:
				batch = append(batch, o)
			default:
				break drain
			}
		}
		c.commit(batch)
		clear(batch) // let the answered ops go
	}
}

// commit commits batch in one transaction. When a write fails (returns an
// error or panics), the transaction is rolled back, that write alone gets
// its error, and the rest of the batch runs again in one transaction: k
// failing writes cost k extra transactions, not one per write.
func (c *committer) commit(batch []*op) {
	for len(batch) > 0 {
		failed, ferr, err := c.try(batch)
		if failed < 0 {
			for _, o := range batch {
				o.done <- err
			}
			return
		}
		batch[failed].done <- ferr
		batch = slices.Delete(batch, failed, failed+1)
	}
}

// try runs the writes of batch in one transaction and commits it. failed is
// the index of the write that returned an error or panicked (ferr; the
// transaction was rolled back), or -1, and then err is the outcome of the
// commit, for every write of the batch.
func (c *committer) try(batch []*op) (failed int, ferr, err error) {
	failed = -1
	defer func() {
		// a panic outside the writes (in bbolt, in the test hook): the
		// transaction was rolled back by bbolt; fail the whole batch
		if r := recover(); r != nil {
			failed, err = -1, storage.Recovered(r)
		}
	}()
	err = c.db.Update(func(tx *bolt.Tx) error {
		for i, o := range batch {
			if err := o.run(tx); err != nil {
				failed, ferr = i, err
				return err
			}
		}
		if c.beforeCommit != nil {
			return c.beforeCommit(len(batch))
		}
		return nil
	})
	return failed, ferr, err
}

func (c *committer) close() {
	close(c.quit)
	<-c.done
}
