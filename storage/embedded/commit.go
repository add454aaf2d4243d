package embedded

import (
	bolt "go.etcd.io/bbolt"
)

// maxGroup caps how many writes share one transaction.
const maxGroup = 512

// op is one write waiting for a commit. fn must be safe to run twice: when
// a shared transaction fails, each op is run again alone.
type op struct {
	fn   func(*bolt.Tx) error
	done chan error
}

// committer implements group commit: the first waiting write is committed
// at once, and every write that arrives while that commit (and its fsync)
// is in progress shares the next one. A lone request never waits for a
// timer, and under load one fsync covers hundreds of events.
type committer struct {
	db   *bolt.DB
	ops  chan op
	quit chan struct{}
	done chan struct{}
}

func newCommitter(db *bolt.DB) *committer {
	c := &committer{db: db, ops: make(chan op, maxGroup), quit: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c
}

// update runs fn in a durable write transaction shared with other writers.
func (c *committer) update(fn func(*bolt.Tx) error) error {
	o := op{fn: fn, done: make(chan error, 1)}
	select {
	case c.ops <- o:
	case <-c.quit:
		return errClosed
	}
	select {
	case err := <-o.done:
		return err
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
	batch := make([]op, 0, maxGroup)
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
	}
}

func (c *committer) commit(batch []op) {
	err := c.db.Update(func(tx *bolt.Tx) error {
		for _, o := range batch {
			if err := o.fn(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil || len(batch) == 1 {
		for _, o := range batch {
			o.done <- err
		}
		return
	}
	// one op failed the shared transaction: run each alone so only the
	// failing one reports an error.
	for _, o := range batch {
		o.done <- c.db.Update(o.fn)
	}
}

func (c *committer) close() {
	close(c.quit)
	<-c.done
}
