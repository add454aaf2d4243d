package embedded

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"

	"github.com/hookline/hookline/storage"
)

// The scrub: "the bytes are gone" from the file, not only from the tree.
//
// bbolt never overwrites a page in place: a transaction that changes a
// record writes the new version of its page elsewhere and frees the old
// one, which keeps its bytes until bbolt happens to reuse it. So, after
// an erasure, the erased body and headers are still in the file: in the
// pages the erasing transaction freed, and in any page freed earlier that
// held a copy (every lease, retry or finish rewrote the record). Pages
// bbolt writes are always whole (a fresh or zeroed buffer holding only
// live data), so the copies are in free pages only, and, after a
// transaction that failed between writing its pages and its meta page,
// in pages past the high water mark.
//
// scrub overwrites every free page, and every page past the high water
// mark, with zeros (only the pages that are not zero already), fsyncs,
// and commits, a slice of page ids at a time, each slice in a bbolt write
// transaction of its own, so that no writer allocates a page meanwhile,
// and with every reader of the Store held out (readers): with no read
// transaction open, bbolt releases every pending page when the
// transaction begins, so a page it reports free (Tx.Page) is one no
// reader can see and no meta page in use references: the pages bbolt
// itself would hand out to the next write. Zeroing them is exactly as
// safe as bbolt reusing them: a crash (kill -9) mid-scrub leaves the
// file's tree as the last commit left it. Between slices other writes go
// on: once the erasure is committed no live page holds its bytes, and a
// free page they allocate is written whole, so a page scanned earlier
// cannot get them back.
//
// Crash safety of the erasure as a whole: the erasing transaction sets
// the scrub mark (bScrub) with the erasure itself; the scrub clears it in
// its last slice's commit. A crash between the two leaves the mark, and
// Open (or the next Cleanup, or the next erasure) scrubs then.
//
// Cost, per slice: readers and writers wait while it walks its page ids
// (in memory), reads its free pages (and the file's tail past the high
// water mark), writes those that are not zero, fsyncs and commits. The
// whole is proportional to the file's size and its free space, not to
// the erased event; the first erasure in a file with much churn writes
// most of its free pages, later ones few (docs/architecture.md,
// "Erasure", has measurements).
var bScrub = []byte("scrub")

// scrubPending is the scrub mark's key in bScrub: its value is the
// number of the last erasure (bScrub's sequence), so that a scrub that
// began before another erasure committed does not clear its mark.
var scrubPending = []byte("pending")

// markScrub sets the scrub mark in tx (an erasing transaction).
func markScrub(tx *bolt.Tx) error {
	b := tx.Bucket(bScrub)
	n, err := b.NextSequence()
	if err != nil {
		return err
	}
	return b.Put(scrubPending, binary.BigEndian.AppendUint64(nil, n))
}

// scrubChunk is how many pages the scrub reads at a time.
const scrubChunk = 256

// scrubSlice is how many pages (of the file's page ids) one scrub
// transaction covers: readers and writers wait for one slice at a time,
// not for the whole file.
const scrubSlice = 65536

// scrub zeroes the free pages of the file when the scrub mark is set, and
// clears it (see above), one slice of page ids per transaction. When an
// erasure committed meanwhile (the mark changed), it starts again from the
// first page: that erasure's pages may be behind it. One scrub runs at a
// time; a scrub that finds the mark cleared has nothing to do. Its errors
// wrap storage.ErrUnavailable.
func (s *Store) scrub() error {
	s.scrubMu.Lock()
	defer s.scrubMu.Unlock()
	f, err := os.OpenFile(s.db.Path(), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("%w: scrubbing %s: %v", storage.ErrUnavailable, s.db.Path(), err)
	}
	defer f.Close()
	// read in a transaction: DB.Info reads the mapping, which a commit
	// growing the file remaps, unless a transaction holds it (the race
	// detector caught a rekey's scrub beside a growing commit)
	var pageSize int64
	if err := s.db.View(func(tx *bolt.Tx) error { pageSize = int64(tx.DB().Info().PageSize); return nil }); err != nil {
		return fmt.Errorf("%w: scrubbing %s: %v", storage.ErrUnavailable, s.db.Path(), err)
	}
	var mark []byte // the mark this scrub clears
	for from := int64(2); ; {
		next, done, err := s.scrubSliceAt(f, pageSize, from, &mark)
		if err != nil {
			return fmt.Errorf("%w: scrubbing %s: %v", storage.ErrUnavailable, s.db.Path(), err)
		}
		if done {
			return nil
		}
		from = next
	}
}

// scrubSliceAt scrubs the pages from from on, a slice of them, in one
// write transaction with every reader held out, and returns where the
// next slice starts. The slice that reaches the end of the file (its tail
// past the high water mark included) clears the mark, if it is still
// *mark (the mark the scrub read first), and the scrub is done; else the
// next slice is the first one again. done is also true when there is no
// mark at all.
func (s *Store) scrubSliceAt(f *os.File, pageSize, from int64, mark *[]byte) (next int64, done bool, err error) {
	s.readers.Lock()
	defer s.readers.Unlock()
	err = s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bScrub)
		now := b.Get(scrubPending)
		if now == nil {
			done = true // another scrub did it
			return nil
		}
		if *mark == nil {
			*mark = bytes.Clone(now)
			s.scrubStage("begin")
		}
		hwm := tx.Size() / pageSize
		st, err := f.Stat()
		if err != nil {
			return err
		}
		end := max(hwm, st.Size()/pageSize)
		to := min(from+scrubSlice, end)
		var free []int64
		for id := from; id < to; id++ {
			if id >= hwm { // past the high water mark: no page of the tree
				free = append(free, id)
				continue
			}
			info, err := tx.Page(int(id))
			if err != nil {
				return err
			}
			if info != nil && info.Type == "free" {
				free = append(free, id)
			}
		}
		n, err := zeroPages(f, pageSize, free)
		if err != nil {
			return err
		}
		s.scrubbed.Add(int64(n))
		last := to >= end
		if last {
			s.scrubStage("zeroed")
		}
		if n > 0 {
			if err := f.Sync(); err != nil {
				return err
			}
		}
		next = to
		if !last {
			return nil
		}
		if !bytes.Equal(now, *mark) {
			// an erasure committed meanwhile: its pages may be behind
			*mark, next = bytes.Clone(now), 2
			return nil
		}
		done = true
		return b.Delete(scrubPending)
	})
	return next, done, err
}

// scrubStage calls Options.OnScrub, if set.
func (s *Store) scrubStage(stage string) {
	if s.onScrub != nil {
		s.onScrub(stage)
	}
}

// zeroPages overwrites with zeros those of the pages ids (ascending) of f
// that are not all zeros, reading runs of contiguous pages at a time, and
// returns how many it overwrote.
func zeroPages(f *os.File, pageSize int64, ids []int64) (int, error) {
	buf := make([]byte, scrubChunk*pageSize)
	zero := make([]byte, pageSize)
	n := 0
	for i := 0; i < len(ids); {
		// a run of contiguous ids, at most scrubChunk long
		j := i + 1
		for j < len(ids) && j-i < scrubChunk && ids[j] == ids[j-1]+1 {
			j++
		}
		run := buf[:int64(j-i)*pageSize]
		if _, err := f.ReadAt(run, ids[i]*pageSize); err != nil {
			return n, err
		}
		for k := range j - i {
			page := run[int64(k)*pageSize : int64(k+1)*pageSize]
			if bytes.Equal(page, zero) {
				continue
			}
			if _, err := f.WriteAt(zero, ids[i+k]*pageSize); err != nil {
				return n, err
			}
			n++
		}
		i = j
	}
	return n, nil
}

// scrubIfMarked scrubs when an erasure's scrub was left undone (a crash,
// a failed write): at Open and at each Cleanup.
func (s *Store) scrubIfMarked() error {
	marked := false
	if err := s.view(func(tx *bolt.Tx) error {
		marked = tx.Bucket(bScrub).Get(scrubPending) != nil
		return nil
	}); err != nil || !marked {
		return err
	}
	return s.scrub()
}
