package enginespike

import (
	"context"
	"encoding/binary"
	"os"
	"sync"
	"time"

	"github.com/hookline/hookline/internal/groupcommit"
)

// Journal is the ceiling of a synced store: each job's record appended to
// one file, fdatasync'd once per group of concurrent writers, the queue
// itself in memory (nothing is read back). Outcomes are appended without
// a sync; a dead letter goes through a synced group.
type Journal struct {
	f     *os.File
	group *groupcommit.Batcher[[]byte, struct{}]
	wmu   sync.Mutex // one append at a time

	mu    sync.Mutex
	queue []Job
}

// OpenJournal creates the journal file path.
func OpenJournal(path string) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	j := &Journal{f: f}
	j.group = groupcommit.New(j.commit, groupcommit.Options[[]byte]{MaxBatch: 512, Linger: 500 * time.Microsecond})
	return j, nil
}

// commit appends a group's records in one write and syncs them.
func (j *Journal) commit(calls []*groupcommit.Call[[]byte, struct{}]) {
	var buf []byte
	for _, c := range calls {
		buf = append(buf, c.Req...)
	}
	j.wmu.Lock()
	_, err := j.f.Write(buf)
	j.wmu.Unlock()
	if err == nil {
		err = fdatasync(j.f)
	}
	for _, c := range calls {
		c.Answer(struct{}{}, err)
	}
}

// record is a length-prefixed record: kind, id, payload.
func record(kind byte, id string, payload []byte) []byte {
	b := binary.AppendUvarint([]byte{kind}, uint64(len(id)))
	b = append(b, id...)
	b = binary.AppendUvarint(b, uint64(len(payload)))
	return append(b, payload...)
}

// Enqueue implements Engine.
func (j *Journal) Enqueue(ctx context.Context, job Job) error {
	if _, err := j.group.Do(ctx, record('e', job.ID, job.Body)); err != nil {
		return err
	}
	j.mu.Lock()
	j.queue = append(j.queue, job)
	j.mu.Unlock()
	return nil
}

// Lease implements Engine: the oldest jobs in memory (a journal is
// written in due order here: every job is due at once).
func (j *Journal) Lease(n int, now int64) ([]Job, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	k := 0
	for k < len(j.queue) && k < n && j.queue[k].Due <= now {
		k++
	}
	out := append([]Job(nil), j.queue[:k]...)
	j.queue = j.queue[k:]
	return out, nil
}

// Finish implements Engine.
func (j *Journal) Finish(job Job) error {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	_, err := j.f.Write(record('f', job.ID, nil))
	return err
}

// Dead implements Engine.
func (j *Journal) Dead(job Job) error {
	_, err := j.group.Do(context.Background(), record('x', job.ID, job.Body))
	return err
}

// Expire implements Engine: a journal has nothing to remove record by
// record (its segments would be dropped whole once every job in them is
// finished and past retention: Reclaim).
func (j *Journal) Expire() error { return nil }

// Reclaim implements Engine: the one segment holds only finished jobs
// past retention, so it is dropped whole.
func (j *Journal) Reclaim() error {
	j.wmu.Lock()
	defer j.wmu.Unlock()
	if err := j.f.Truncate(0); err != nil {
		return err
	}
	return fdatasync(j.f)
}

// Close implements Engine.
func (j *Journal) Close() error {
	j.group.Close()
	return j.f.Close()
}
