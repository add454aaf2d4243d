package storage

// Per-key ordering (a destination's `ordered <rule>`). The ingress puts
// the key its rule found on each ordered delivery (Delivery.OrderKey);
// the deliveries of one lane with the same key form a chain, in the order
// they were accepted:
//
//   - Enqueue appends an ordered job to its chain (ChainOf). The first job
//     of a chain, its head, is queued due as usual; the others wait, queued
//     but in no due index (they cost no lease work), until they are the head.
//   - Finishing the head as Delivered, or as Dead with on_dead skip, pops
//     it and makes the next job of its chain due now (PopsChain). Retry and
//     Release keep it the head (due later), so do an expired lease and a
//     Dead with on_dead block: the key stays blocked behind the dead head,
//     whose DLQ entry says how many wait (ChainWaiting).
//   - A blocking head's DLQ entry retried re-queues it as the head (it keeps
//     its place); resolved, discarded or removed past dlq retention, it pops
//     it and releases the next (ReleasesChain); investigating keeps it.
//
// A replay is never chained. A job is popped only while it is its chain's
// head, so a job that left its chain (a dead job skipped, an entry
// resolved) and is retried later goes out on its own, unordered. The rules
// are the functions below; the backends only persist the chains, each in
// the same atomic step as the job it changes.

import (
	"fmt"
	"strings"
)

// chainSep separates a chain's lane from its key (no lane holds it).
const chainSep = "\x00"

// ChainOf names the chain job waits in: its lane (LaneOf) and its order
// key; "" when it is not ordered (no OrderKey) or a replay (a replay is
// never chained).
func ChainOf(job *Event) string {
	if job.OrderKey == "" || job.Replay {
		return ""
	}
	return ChainPrefix(LaneOf(job)) + job.OrderKey
}

// OrderKeyOfChain is the order key of chain name, one of lane's chains
// (ChainOf's inverse); ok is false when name is not a chain of lane. A
// backend that meets a chained job whose record cannot be decoded gets its
// order key back from the chain that holds it.
func OrderKeyOfChain(lane, name string) (key string, ok bool) {
	return strings.CutPrefix(name, ChainPrefix(lane))
}

// ChainPrefix is how the names of lane's chains begin: its base lane's
// (BaseLane), so that an order key's events keep their order whatever
// their tenants' shares.
func ChainPrefix(lane string) string { return BaseLane(lane) + chainSep }

// ChainOfEntry is the chain of the delivery a DLQ entry holds (ChainOf
// its event, as a retry re-queues it).
func ChainOfEntry(e *DLQEntry) string {
	ev := EventOfEntry(e)
	return ChainOf(&ev)
}

// OrderKeyOf is the order key of ev's ordered deliveries (ev's own when it
// lists none), "" when none is ordered. An event's ordered deliveries
// share one key (its source's destinations share one ordered rule): two
// different keys are an error, and Enqueue stores nothing.
func OrderKeyOf(ev *Event) (string, error) {
	key := ev.OrderKey
	if len(ev.Deliveries) > 0 {
		key = ""
	}
	for _, d := range ev.Deliveries {
		switch {
		case d.OrderKey == "" || d.OrderKey == key:
		case key == "":
			key = d.OrderKey
		default:
			return "", fmt.Errorf("deliveries of event %s carry two order keys (%q and %q): an event's ordered deliveries must share one", ev.ID, key, d.OrderKey)
		}
	}
	return key, nil
}

// PopsChain reports whether finishing job, the head of its chain, with
// result r lets the next job of the chain go: Delivered does, and Dead
// with OrderSkip (on_dead skip). Retry and Release keep it the head (due
// again later), and so does Dead without OrderSkip: it blocks its key
// until its DLQ entry is settled (ReleasesChain).
func PopsChain(job *Event, r Result) bool {
	return r == Delivered || r == Dead && job.OrderSkip
}

// ReleasesChain reports whether moving the DLQ entry of a blocking head
// (dead, still its chain's head) to status to pops it and lets the next
// job of its chain go: resolved and discarded do (as does the entry's
// removal past dlq retention); investigating keeps the key blocked, and a
// retry re-queues the head in its place.
func ReleasesChain(to DLQStatus) bool {
	return to == DLQResolved || to == DLQDiscarded
}

// HeadBlocks reports whether the head of a chain, whose record has status
// st ("" when the record is gone, past retention), is blocked behind its
// DLQ entry, so that settling the entry may pop it: it is not queued or in
// flight again (retried).
func HeadBlocks(st Status) bool {
	return st != StatusQueued && st != StatusInFlight
}

// ChainWaiting is how many deliveries wait behind the delivery of entry e
// (DLQEntry.Waiting), given its chain's head and length: the jobs after
// it while it blocks its chain (an open entry of the chain's head), 0
// otherwise.
func ChainWaiting(e *DLQEntry, head string, length int) int {
	if !e.Status.Open() || head != e.ID || length < 1 {
		return 0
	}
	return length - 1
}
