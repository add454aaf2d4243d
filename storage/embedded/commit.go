package embedded

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hookline/hookline/internal/groupcommit"
	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// maxGroup caps how many writes share one transaction.
const maxGroup = 512

// maxLinger caps how long a commit waits for the writers the previous one
// just answered (groupcommit.Options.Linger; a quarter of the previous
// commit's time if shorter): with two writers in a loop, each fsync then
// covers both instead of one at a time.
const maxLinger = 500 * time.Microsecond

// op is one write waiting for a commit. fn may run more than once: when one
// write of a shared transaction fails, the transaction is rolled back and
// the others run again together, without it. fn never runs again once its
// caller has stopped waiting (see abandon; a write abandoned before its
// commit began is never run at all: groupcommit drops it).
type op struct {
	fn func(*kv.Tx) error
	// unsynced: the write may be lost by a crash before the next synced
	// commit (see committer.updateUnsynced); a batch of such writes only is
	// committed without waiting for the disk.
	unsynced bool

	mu   sync.Mutex // held while fn runs, so that abandon waits for it
	gone bool       // the caller stopped waiting: fn must not run again
}

// run runs fn in tx, unless the caller has gone. A panic in fn is fn's
// error: the transaction is rolled back and only this write fails.
func (o *op) run(tx *kv.Tx) (err error) {
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

// call is a write in a group commit; its answer is the write's outcome.
type call = groupcommit.Call[*op, error]

// committer implements group commit (see groupcommit): the first waiting
// write is committed at once, and every write that arrives while that
// commit (and its fsync) is in progress shares the next one. A lone
// request never waits for a timer, and under load one fsync covers
// hundreds of events.
type committer struct {
	db *kv.DB
	b  *groupcommit.Batcher[*op, error]
	// beforeCommit (Options.BeforeCommit) runs after a batch's writes,
	// before its transaction commits; nil in production.
	beforeCommit func(writes int) error
}

func newCommitter(db *kv.DB, beforeCommit func(int) error) *committer {
	c := &committer{db: db, beforeCommit: beforeCommit}
	c.b = groupcommit.New(c.commit, groupcommit.Options[*op]{
		MaxBatch: maxGroup,
		Closed:   errClosed,
		Recover:  func(v any) error { return storage.Recovered(v) },
		Abandon:  (*op).abandon,
		Linger:   maxLinger,
	})
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
func (c *committer) update(ctx context.Context, fn func(*kv.Tx) error) error {
	return c.do(ctx, &op{fn: fn})
}

// updateUnsynced is update for a write that at-least-once delivery allows
// a crash to lose (a delivery's outcome: lost, the job is leased and
// delivered again). It shares a transaction with other writes as update
// does; a transaction of such writes only commits without its own fsync
// and is made durable by the next synced commit (or a switch to a new
// log, or Close); until then a crash, kill -9 included, may lose it. The
// engine's log keeps commits in order, so a crash loses a suffix of them,
// never an unsynced write while keeping a later one.
func (c *committer) updateUnsynced(ctx context.Context, fn func(*kv.Tx) error) error {
	return c.do(ctx, &op{fn: fn, unsynced: true})
}

// do waits for w's commit.
func (c *committer) do(ctx context.Context, w *op) error {
	// the write's outcome is the answer; err is the batcher's own: ctx's
	// error, errClosed or a panic
	outcome, err := c.b.Do(ctx, w)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
			return unavailableCtx(ctx)
		}
		return err
	}
	return outcome
}

// commit commits batch in one transaction. When a write fails (returns an
// error or panics), the transaction is rolled back, that write alone gets
// its error, and the rest of the batch runs again in one transaction: k
// failing writes cost k extra transactions, not one per write.
func (c *committer) commit(batch []*call) {
	for len(batch) > 0 {
		failed, ferr, err := c.try(batch)
		if failed < 0 {
			for _, w := range batch {
				w.Answer(err, nil)
			}
			return
		}
		batch[failed].Answer(ferr, nil)
		batch = slices.Delete(batch, failed, failed+1)
	}
}

// try runs the writes of batch in one transaction and commits it. failed is
// the index of the write that returned an error or panicked (ferr; the
// transaction was rolled back), or -1, and then err is the outcome of the
// commit, for every write of the batch.
func (c *committer) try(batch []*call) (failed int, ferr, err error) {
	failed = -1
	defer func() {
		// a panic outside the writes (in the engine, in the test hook):
		// the transaction was discarded; fail the whole batch
		if r := recover(); r != nil {
			failed, err = -1, storage.Recovered(r)
		}
	}()
	update := c.db.UpdateUnsynced
	for _, w := range batch {
		if !w.Req.unsynced {
			update = c.db.Update
			break
		}
	}
	err = update(func(tx *kv.Tx) error {
		for i, w := range batch {
			if err := w.Req.run(tx); err != nil {
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

func (c *committer) close() { c.b.Close() }
