package embedded

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded/kv"
)

// The scrub: "the bytes are gone" from the files, not only from the
// index.
//
// The engine never overwrites a value in place: a value deleted or
// rewritten stays in the write-ahead log that took it, and in the sorted
// tables written before, until a compaction rewrites them. So after an
// erasure (or a rekey) the old bytes are still in files. The erasing
// transaction deletes every key of the event again, those gone already
// included (one deleted earlier may sit beside its old value in a
// bottom-level table, which only a newer tombstone compacting into it
// cleans), and it (or a re-sealing one) commits with no read transaction open
// (kv.Tx.Scrubbing: a snapshot older than it would keep the old values
// through every compaction); then kv.DB.Scrub flushes the memtable (the
// logs holding them become obsolete, and are deleted: the store never
// recycles a log), compacts the keys of the erased event (or every
// record, for a rekey) through every level, so that no table holds an
// older value, and waits for the obsolete files to be deleted. Its cost
// is a flush and the rewrite of the tables those keys are in, not of the
// whole store; reads and writes go on meanwhile.
//
// Crash safety: the erasing transaction writes a mark with the erasure
// itself (bScrub: sequence -> the spans to scrub, JSON); the scrub deletes
// the marks it covered once kv.DB.Scrub is done. A crash between the two
// leaves the marks, and Open (or the next Cleanup, or the next erasure)
// scrubs then. A mark names keys (an event's internal id), never values.
var bScrub = []byte("scrub")

// scrubPending is the mark of the bbolt versions (a scrub of free pages
// left undone). Their file is gone once moved to this engine
// (migrate.go), with its free pages: the mark is only deleted.
var scrubPending = []byte("pending")

// scrubSpan is a span of keys of a mark, as stored.
type scrubSpan struct {
	Bucket []byte `json:"b"`
	Prefix []byte `json:"p,omitempty"`
}

// markScrub sets a scrub mark for spans in tx (an erasing transaction),
// which commits with no read transaction open (kv.Tx.Scrubbing).
func markScrub(tx *kv.Tx, spans ...scrubSpan) error {
	tx.Scrubbing()
	b := tx.Bucket(bScrub)
	n, err := b.NextSequence()
	if err != nil {
		return err
	}
	v, err := json.Marshal(spans)
	if err != nil {
		return err
	}
	return b.Put(binary.BigEndian.AppendUint64(nil, n), v)
}

// eventSpans are the keys holding event id's payload: its records and
// payload record (bEvents) and its DLQ entries (bDLQ), all named by the
// event's internal id followed by a destination (storage.DeliveryID), or
// by nothing else. Another event whose id starts with id is compacted
// too: the span costs a little more, and erases nothing of it.
func eventSpans(id string) []scrubSpan {
	return []scrubSpan{{Bucket: bEvents, Prefix: []byte(id)}, {Bucket: bDLQ, Prefix: []byte(id)}}
}

// recordSpans are every record and DLQ entry: what a rekey rewrote.
var recordSpans = []scrubSpan{{Bucket: bEvents}, {Bucket: bDLQ}}

// scrub scrubs the spans of every mark set, and deletes those marks (see
// above). One scrub runs at a time; one that finds no mark has nothing to
// do. Its errors wrap storage.ErrUnavailable.
func (s *Store) scrub(ctx context.Context) error {
	s.scrubMu.Lock()
	defer s.scrubMu.Unlock()
	var marks [][]byte
	var spans []kv.Span
	err := s.view(func(tx *kv.Tx) error {
		marks, spans = nil, nil
		return tx.Bucket(bScrub).ForEach(func(k, v []byte) error {
			marks = append(marks, k)
			if string(k) == string(scrubPending) {
				return nil
			}
			var sp []scrubSpan
			if err := json.Unmarshal(v, &sp); err != nil {
				// unreadable: scrub every record rather than skip one
				sp = recordSpans
			}
			for _, x := range sp {
				spans = append(spans, kv.Span{Bucket: x.Bucket, Prefix: x.Prefix})
			}
			return nil
		})
	})
	if err != nil || len(marks) == 0 {
		return err
	}
	s.scrubStage("begin")
	if err := s.db.Scrub(ctx, spans); err != nil {
		return fmt.Errorf("%w: scrubbing %s: %v", storage.ErrUnavailable, s.path, err)
	}
	s.scrubStage("compacted")
	return s.update(ctx, func(tx *kv.Tx) error {
		for _, k := range marks {
			if err := tx.Bucket(bScrub).Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// scrubStage calls Options.OnScrub, if set.
func (s *Store) scrubStage(stage string) {
	if s.onScrub != nil {
		s.onScrub(stage)
	}
}

// scrubIfMarked scrubs when an erasure's scrub was left undone (a crash,
// a failed write): at Open and at each Cleanup.
func (s *Store) scrubIfMarked(ctx context.Context) error {
	return s.scrub(ctx)
}
