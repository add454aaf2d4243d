package redisstore

import (
	"math/rand/v2"
	"sync/atomic"
)

// The peek window. An event's keys hash to one partition, so a backlog
// is spread over all of them, every lane's included: while there is one,
// any two partitions hold more due jobs than a Lease wants. Peeking every
// partition then costs a script in each for jobs the Lease leaves where
// they are, and spreads the jobs it picks over every partition, one lease
// script in each (Redis spends more on running a script than on the few
// commands inside). So while the last Lease found a backlog, the next one
// peeks a window of peekWindow partitions, the next ones in turn (each
// node starts at a random one, so that nodes sharing the store do not
// herd onto the same keys), and peeks the others in a second round trip
// only when the window holds fewer due jobs than it wants. Without a
// backlog a Lease peeks every partition at once, as an idle store's next
// event needs: one round trip, wherever it hashed to.
//
// A job in a partition outside the window waits for the window to come
// round, at most Partitions/peekWindow Leases while the backlog lasts: the
// jobs leased are the oldest of the window's, not of the whole store. So
// the window opens only on a backlog deep in every partition (found),
// where the window's oldest jobs are about as old as any and lanes still
// take turns within it; a shallow backlog (a few events held, say) goes
// out oldest first across the store. A gate that paces some lane (a
// rate_limit, the catch-up after a resume) keeps every peek wide: a paced
// lane's jobs leave a few at a time, and they leave oldest first across
// the store (docs/admin-api.md: "on resume the backlog goes in order of
// due time"). Unpaced, the workers deliver a batch at once, in parallel,
// and the order within a few batches is not one anybody sees.

// peekWindow is how many partitions a Lease peeks first while the store
// has a backlog.
const peekWindow = 2

// window is the peek window's state, per Store.
type window struct {
	// backlog is set when every partition the last peek read held at
	// least as many due jobs as the Lease wanted
	backlog atomic.Bool
	next    atomic.Uint32
}

func newWindow() *window {
	w := &window{}
	w.next.Store(rand.Uint32())
	return w
}

// order returns the partitions (of parts) the next peek reads first, and
// the ones it reads only when those hold too few due jobs (nil: first is
// every partition). Only with narrow set (the gate paces no lane) may the
// peek start with a window.
func (w *window) order(parts int, narrow bool) (first, rest []int) {
	all := make([]int, parts)
	if !narrow || !w.backlog.Load() || parts <= peekWindow {
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	start := int(w.next.Add(peekWindow) % uint32(parts))
	for i := range all {
		all[i] = (start + i) % parts
	}
	return all[:peekWindow], all[peekWindow:]
}

// found records what a peek found: of the partitions it read, full held
// at least as many due jobs as were wanted. The next peek starts with a
// window only if every one did: a backlog deep in every partition, where
// the window's jobs are as old as any (a shallow one, say a few events
// held, goes out oldest first across the store).
func (w *window) found(full, read int) { w.backlog.Store(read > 0 && full == read) }
