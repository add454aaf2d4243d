// Package redisstore is hookline's shared store on Redis (single node,
// Sentinel or Cluster, through go-redis's UniversalClient), for several
// Caddy instances sharing the work.
//
// Key space. Every key carries a hash tag naming one of Partitions
// partitions, {<prefix>:<p>}, so that each Lua script touches one Cluster
// slot and runs atomically, while the partitions spread load over the
// slots (and so over the masters) of a cluster:
//
//	{hookline:7}:claim:<source>\x00<event id>  id, expires with the dedupe window
//	{hookline:7}:ids:<source>\x00<event id>    id, while the event is kept
//	{hookline:7}:ev:<id>                       hash: event JSON, attempts, status, due, lease
//	{hookline:7}:q:<lane>                      zset id -> due ms: queued and leased jobs of a lane (today a source)
//	{hookline:7}:lanes                         set of the partition's lanes
//	{hookline:pace:<lane>}                     a lane's pace (GCRA time, microseconds), shared by all nodes
//	{hookline:7}:claimexp                      zset claim -> expiry ms (cleanup)
//	{hookline:7}:inflight                      set of leased ids
//	{hookline:7}:done                          zset id -> finished ms (retention)
//	{hookline:7}:dlq:<id>                      hash: entry JSON, status, created ms
//	{hookline:7}:dlqidx                        zset id -> created ms
//	{hookline:7}:dlqopen                       set of pending/investigating ids
//
// An event's partition is a hash of (source, event id), so the claim and
// the job it creates are in the same slot and claim-and-enqueue is one
// script. Times are the callers' clocks (milliseconds): keep nodes in NTP sync.
package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/dlq"
	"github.com/hookline/hookline/storage"
)

// Defaults.
const (
	DefaultPrefix     = "hookline"
	DefaultPartitions = 16
)

// Options configure a Store.
type Options struct {
	// Prefix of every key (default "hookline").
	Prefix string
	// Partitions is the number of hash-tagged partitions (default 16). It
	// must not change while events are stored.
	Partitions int
	// MinReplicas, when > 0, makes every acknowledged write wait (WAIT)
	// until that many replicas have it, up to WaitTimeout; fewer is a
	// failure (the ingress answers 503).
	MinReplicas int
	WaitTimeout time.Duration
}

// Store is the Redis-backed storage.Store.
type Store struct {
	c        redis.UniversalClient
	opts     Options
	parts    []partition
	enqueues *batcher
	finishes *batcher
	layout   layoutState

	migrateMu sync.Mutex
	migrated  atomic.Bool
}

// Interface guard
var _ storage.Store = (*Store)(nil)

type partition struct {
	tag string // "{prefix:n}"
}

func (p partition) key(kind string) string    { return p.tag + ":" + kind }
func (p partition) ev(id string) string       { return p.tag + ":ev:" + id }
func (p partition) evPrefix() string          { return p.tag + ":ev:" }
func (p partition) dlqEntry(id string) string { return p.tag + ":dlq:" + id }
func (p partition) claim(ck string) string    { return p.tag + ":claim:" + ck }
func (p partition) ids(ck string) string      { return p.tag + ":ids:" + ck }
func (p partition) lanePrefix() string        { return p.tag + ":q:" }
func (p partition) lane(lane string) string   { return p.tag + ":q:" + lane }

// New wraps a connected client. Close closes the client.
func New(c redis.UniversalClient, opts Options) *Store {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.Partitions <= 0 {
		opts.Partitions = DefaultPartitions
	}
	if opts.WaitTimeout <= 0 {
		opts.WaitTimeout = time.Second
	}
	s := &Store{c: c, opts: opts}
	s.enqueues = newBatcher(s, enqueueScript)
	s.finishes = newBatcher(s, finishScript)
	for i := range opts.Partitions {
		s.parts = append(s.parts, partition{tag: "{" + opts.Prefix + ":" + strconv.Itoa(i) + "}"})
	}
	return s
}

// Client is the underlying client.
func (s *Store) Client() redis.UniversalClient { return s.c }

// Close stops the batcher and closes the client.
func (s *Store) Close() error {
	s.enqueues.close()
	s.finishes.close()
	return s.c.Close()
}

func claimKeyText(source, eventID string) string { return source + "\x00" + eventID }

func (s *Store) partitionOf(key string) partition {
	h := fnv.New32a()
	h.Write([]byte(key))
	return s.parts[h.Sum32()%uint32(len(s.parts))]
}

// partitionForEvent is where an event and its claim live.
func (s *Store) partitionForEvent(ev *storage.Event) partition {
	if ev.Dedupe {
		return s.partitionOf(claimKeyText(ev.Source, ev.EventID))
	}
	return s.partitionOf(ev.ID)
}

func unavailable(err error) error {
	if err == nil || errors.Is(err, storage.ErrUnavailable) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %v", storage.ErrUnavailable, err)
	}
	return fmt.Errorf("%w: redis: %v", storage.ErrUnavailable, err)
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time {
	if v <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

// run runs a writing script; with MinReplicas it also waits for replicas.
// WAIT must run on the connection of the write, so both go in one pipeline.
func (s *Store) run(ctx context.Context, p partition, sc *redis.Script, keys []string, args ...any) (any, error) {
	if err := s.CheckLayout(ctx); err != nil {
		return nil, err
	}
	if s.opts.MinReplicas <= 0 {
		return s.eval(ctx, sc, keys, args...) // at most once, unless retryable
	}
	// make sure the script is cached, then EVALSHA + WAIT on one connection
	if err := sc.Load(ctx, s.c).Err(); err != nil {
		return nil, err
	}
	var evalCmd *redis.Cmd
	var waitCmd *redis.Cmd
	_, err := s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		evalCmd = evalSha(ctx, pipe, sc, keys, args)
		waitCmd = pipe.Do(ctx, "WAIT", s.opts.MinReplicas, s.opts.WaitTimeout.Milliseconds())
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n, _ := waitCmd.Int64(); n < int64(s.opts.MinReplicas) {
		return nil, fmt.Errorf("write reached %d replicas, %d required", n, s.opts.MinReplicas)
	}
	return evalCmd.Result()
}

// Enqueue implements storage.Store.
func (s *Store) Enqueue(ctx context.Context, ev *storage.Event, dedupeUntil time.Time) (storage.EnqueueResult, error) {
	if err := ctx.Err(); err != nil {
		return storage.EnqueueResult{}, err
	}
	now := time.Now()
	p := s.partitionForEvent(ev)
	data, err := json.Marshal(ev)
	if err != nil {
		return storage.EnqueueResult{}, err
	}
	ck := ""
	dedupe := "0"
	expires := ms(now) + 1
	if ev.Dedupe {
		ck, dedupe = claimKeyText(ev.Source, ev.EventID), "1"
		expires = max(ms(dedupeUntil), expires)
	}
	lane := storage.LaneOf(ev)
	keys := []string{p.claim(ck), p.ids(ck), p.ev(ev.ID), p.key("claimexp"), p.lane(lane), p.key("lanes")}
	touch := "0"
	if s.opts.MinReplicas > 0 {
		touch = "1"
	}
	args := []any{ev.ID, dedupe, expires, data, ms(now), ck, touch, ev.Source, lane}
	var v any
	if s.opts.MinReplicas > 0 {
		v, err = s.run(ctx, p, enqueueScript, keys, args...)
	} else {
		// concurrent requests share round trips, as they share fsyncs in
		// the embedded store
		v, err = s.enqueues.do(ctx, scriptCall{keys: keys, args: args})
	}
	if err != nil {
		return storage.EnqueueResult{}, unavailable(err)
	}
	res, _ := v.([]any)
	if len(res) < 2 {
		return storage.EnqueueResult{}, unavailable(fmt.Errorf("unexpected enqueue reply %v", v))
	}
	id, _ := res[1].(string)
	if dup, _ := res[0].(int64); dup == 1 {
		st, err := s.statusOf(ctx, p, id, now)
		if err != nil {
			return storage.EnqueueResult{}, unavailable(err)
		}
		out := storage.EnqueueResult{Duplicate: true, ID: id, Status: st}
		if len(res) == 3 {
			if left, _ := res[2].(int64); left > 0 {
				out.DedupeUntil = now.Add(time.Duration(left) * time.Millisecond)
			}
		}
		return out, nil
	}
	return storage.EnqueueResult{ID: id, Status: storage.StatusQueued}, nil
}

// statusOf is the status of event id in partition p.
func (s *Store) statusOf(ctx context.Context, p partition, id string, now time.Time) (storage.Status, error) {
	vals, err := s.c.HMGet(ctx, p.ev(id), "st", "lu").Result()
	if err != nil {
		return "", err
	}
	if st, ok := vals[0].(string); ok && st != "" {
		if st == string(storage.StatusInFlight) {
			if lu, _ := strconv.ParseInt(fmt.Sprint(vals[1]), 10, 64); lu <= ms(now) {
				return storage.StatusQueued, nil
			}
		}
		return storage.Status(st), nil
	}
	n, err := s.c.Exists(ctx, p.dlqEntry(id)).Result()
	if err != nil {
		return "", err
	}
	if n > 0 {
		return storage.StatusDead, nil
	}
	return storage.StatusDelivered, nil
}

// Lease implements storage.Store. One pipelined read finds, in every
// partition, the due jobs of each lane the gate lets through; the lanes
// take turns (storage.PickFair); paced lanes take their slots from the
// pace all nodes share; then each partition holding some of the chosen
// jobs leases them atomically, skipping any another node leased
// meanwhile. A node never leases more than it has idle workers for, so
// several nodes sharing a backlog do not herd onto it.
func (s *Store) Lease(ctx context.Context, now time.Time, n int, lease time.Duration, gate *storage.Gate) ([]*storage.Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	cands, err := s.peek(ctx, now, n, gate)
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	picked, err := storage.Plan(cands, n, gate, func(want map[string]int) (map[string]int, error) {
		return s.pace(ctx, now, want, gate)
	})
	if err != nil {
		return nil, err
	}
	if len(picked) == 0 {
		return nil, nil
	}
	rank := make(map[string]int, len(picked))
	var order []int
	byPart := make(map[int][]any)
	for i, c := range picked {
		rank[c.ID] = i
		if byPart[c.Part] == nil {
			order = append(order, c.Part)
		}
		byPart[c.Part] = append(byPart[c.Part], c.Lane, c.ID)
	}
	until := now.Add(lease)
	calls := make([]scriptCall, len(order))
	for k, i := range order {
		p := s.parts[i]
		// the token names the partition: Finish must find the job where it
		// was leased, whatever its event fields hash to
		args := []any{ms(now), ms(until), p.evPrefix(), strconv.Itoa(i) + ":" + newToken(), p.lanePrefix()}
		calls[k] = scriptCall{keys: []string{p.key("inflight")}, args: append(args, byPart[i]...)}
	}
	// one round trip for every partition's share
	leased, err := s.evalPipelined(ctx, leaseScript, calls)
	var jobs []*storage.Job
	for _, cmd := range leased {
		v, cerr := cmd.Result()
		if cerr != nil {
			continue // that partition's jobs stay due; the others were leased
		}
		rows, _ := v.([]any)
		for _, row := range rows {
			job, derr := decodeLeased(row, until)
			if derr != nil {
				s.poison(ctx, row, derr) // undecodable record: to the DLQ, not back at every lease
				continue
			}
			jobs = append(jobs, job)
		}
	}
	if len(jobs) == 0 && err != nil {
		return nil, unavailable(err)
	}
	// hand out in the order chosen
	slices.SortStableFunc(jobs, func(a, b *storage.Job) int { return rank[a.ID] - rank[b.ID] })
	return jobs, nil
}

// skipArgs lists the lanes the gate skips, as script arguments.
func skipArgs(gate *storage.Gate) []any {
	if gate == nil {
		return nil
	}
	var out []any
	for lane, skip := range gate.Skip {
		if skip {
			out = append(out, lane)
		}
	}
	return out
}

// peek lists up to n due jobs of each lane the gate lets through, in every
// partition, in one pipelined round trip.
func (s *Store) peek(ctx context.Context, now time.Time, n int, gate *storage.Gate) ([]storage.Candidate, error) {
	skip := skipArgs(gate)
	calls := make([]scriptCall, len(s.parts))
	for i, p := range s.parts {
		calls[i] = scriptCall{keys: []string{p.key("lanes")}, args: append([]any{ms(now), n, p.lanePrefix()}, skip...)}
	}
	cmds, err := s.evalPipelined(ctx, peekScript, calls)
	if err != nil {
		return nil, unavailable(err)
	}
	var out []storage.Candidate
	for i, cmd := range cmds {
		v, _ := cmd.Val().([]any)
		for j := 0; j+2 < len(v); j += 3 {
			lane, _ := v[j].(string)
			id, _ := v[j+1].(string)
			due, _ := strconv.ParseFloat(fmt.Sprint(v[j+2]), 64)
			out = append(out, storage.Candidate{Lane: lane, ID: id, Due: time.UnixMilli(int64(due)), Part: i})
		}
	}
	return out, nil
}

func (s *Store) paceKey(lane string) string { return "{" + s.opts.Prefix + ":pace:" + lane + "}" }

// pace takes, for each paced lane in want, up to that many slots of the
// lane's shared pace, and returns how many each got.
func (s *Store) pace(ctx context.Context, now time.Time, want map[string]int, gate *storage.Gate) (map[string]int, error) {
	var lanes []string
	var calls []scriptCall
	for lane, k := range want {
		r, ok := gate.RateOf(lane)
		if !ok {
			continue
		}
		lanes = append(lanes, lane)
		calls = append(calls, scriptCall{keys: []string{s.paceKey(lane)},
			args: []any{now.UnixMicro(), k, max(r.Interval().Microseconds(), 1), r.Burst()}})
	}
	if len(calls) == 0 {
		return map[string]int{}, nil
	}
	cmds, err := s.evalPipelined(ctx, paceScript, calls)
	if err != nil {
		return nil, unavailable(err)
	}
	out := make(map[string]int, len(lanes))
	for i, cmd := range cmds {
		v, _ := cmd.Val().([]any)
		if len(v) == 2 {
			g, _ := v[0].(int64)
			out[lanes[i]] = int(g)
		}
	}
	return out, nil
}

// migrate builds the lane queues of partitions written before lanes
// existed, once per Store.
func (s *Store) migrate(ctx context.Context) error {
	if s.migrated.Load() {
		return nil
	}
	s.migrateMu.Lock()
	defer s.migrateMu.Unlock()
	if s.migrated.Load() {
		return nil
	}
	for _, p := range s.parts {
		err := migrateLanesScript.Run(ctx, s.c, []string{p.key("due"), p.key("lanes"), p.key("lanes:v1")},
			p.evPrefix(), p.lanePrefix()).Err()
		if err != nil {
			return unavailable(err)
		}
	}
	s.migrated.Store(true)
	return nil
}

func decodeLeased(row any, until time.Time) (*storage.Job, error) {
	f, _ := row.([]any)
	if len(f) != 5 {
		return nil, fmt.Errorf("unexpected lease reply")
	}
	str := func(i int) string { s, _ := f[i].(string); return s }
	job := &storage.Job{Lease: str(1), LeaseUntil: until}
	if err := json.Unmarshal([]byte(str(2)), &job.Event); err != nil {
		return nil, fmt.Errorf("decoding event %s: %v", str(0), err)
	}
	if a := str(3); a != "" {
		if err := json.Unmarshal([]byte(a), &job.Attempts); err != nil {
			return nil, fmt.Errorf("decoding attempts of %s: %v", str(0), err)
		}
	}
	job.RoundStart, _ = strconv.Atoi(str(4))
	return job, nil
}

// NextDue implements storage.Store: the first job of every lane the gate
// lets through, and the next slot of the paced ones, in one round trip.
func (s *Store) NextDue(ctx context.Context, gate *storage.Gate) (time.Time, bool, error) {
	if err := s.migrate(ctx); err != nil {
		return time.Time{}, false, err
	}
	skip := skipArgs(gate)
	calls := make([]scriptCall, len(s.parts))
	for i, p := range s.parts {
		calls[i] = scriptCall{keys: []string{p.key("lanes")}, args: append([]any{p.lanePrefix()}, skip...)}
	}
	heads, err := s.evalPipelined(ctx, headsScript, calls)
	if err != nil {
		return time.Time{}, false, unavailable(err)
	}
	paces := map[string]*redis.StringCmd{}
	if gate != nil && len(gate.Pace) > 0 {
		_, err := s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for lane := range gate.Pace {
				if _, ok := gate.RateOf(lane); ok && !gate.Skipped(lane) {
					paces[lane] = pipe.Get(ctx, s.paceKey(lane))
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return time.Time{}, false, unavailable(err)
		}
	}
	var best time.Time
	var ok bool
	for _, c := range heads {
		v, _ := c.Val().([]any)
		for j := 0; j+1 < len(v); j += 2 {
			lane, _ := v[j].(string)
			d, _ := strconv.ParseFloat(fmt.Sprint(v[j+1]), 64)
			due := time.UnixMilli(int64(d))
			if pc, paced := paces[lane]; paced {
				if tat, err := pc.Int64(); err == nil {
					r, _ := gate.RateOf(lane)
					if next := r.NextSlot(time.UnixMicro(tat)); next.After(due) {
						due = next
					}
				}
			}
			if !ok || due.Before(best) {
				best, ok = due, true
			}
		}
	}
	return best, ok, nil
}

// Finish implements storage.Store.
func (s *Store) Finish(ctx context.Context, job *storage.Job, out storage.Outcome) error {
	now := time.Now()
	p, ok := s.leasePartition(job.Lease)
	if !ok {
		return storage.ErrLeaseLost
	}
	attempts := job.Attempts
	if out.Attempt != nil {
		attempts = append(slices.Clip(attempts), *out.Attempt)
	}
	attJSON, err := json.Marshal(attempts)
	if err != nil {
		return err
	}
	var result, evJSON, entryJSON string
	due := out.Due
	if due.IsZero() {
		due = now
	}
	switch out.Result {
	case storage.Retry:
		result = "retry"
	case storage.Release:
		result = "release"
	case storage.Delivered, storage.Dead:
		result = "delivered"
		stripped := job.Event
		stripped.Body, stripped.Headers = nil, nil
		b, err := json.Marshal(stripped)
		if err != nil {
			return err
		}
		evJSON = string(b)
		if out.Result == storage.Dead {
			result = "dead"
			e := &dlq.Entry{
				ID: job.ID, EventID: job.EventID, Source: job.Source, Upstream: job.Upstream,
				Payload: job.Body, Headers: job.Headers, Error: out.Error, Attempts: attempts,
				ReceivedAt: job.ReceivedAt, CreatedAt: now, UpdatedAt: now, Status: dlq.StatusPending,
			}
			if n := len(attempts); n > 0 {
				e.LastStatus = attempts[n-1].Status
			}
			if old, err := s.getEntry(ctx, p, job.ID); err == nil && old != nil {
				e.Retries = old.Retries
			} else if err != nil && !errors.Is(err, dlq.ErrNotFound) {
				return unavailable(err)
			}
			b, err := json.Marshal(e)
			if err != nil {
				return err
			}
			entryJSON = string(b)
		}
	default:
		return fmt.Errorf("unknown result %d", out.Result)
	}
	lane := storage.LaneOf(&job.Event)
	keys := []string{p.ev(job.ID), p.key("inflight"), p.key("done"),
		p.dlqEntry(job.ID), p.key("dlqidx"), p.key("dlqopen"), p.lane(lane), p.key("lanes")}
	args := []any{job.ID, job.Lease, result, ms(now), ms(due), attJSON, evJSON, entryJSON, job.Source, lane}
	var v any
	if s.opts.MinReplicas > 0 {
		v, err = s.run(ctx, p, finishScript, keys, args...)
	} else {
		v, err = s.finishes.do(ctx, scriptCall{keys: keys, args: args})
	}
	if err != nil {
		return unavailable(err)
	}
	if n, _ := v.(int64); n == 0 {
		return storage.ErrLeaseLost
	}
	return nil
}

// leasePartition is the partition named by a lease token ("<n>:...").
func (s *Store) leasePartition(token string) (partition, bool) {
	n, _, ok := strings.Cut(token, ":")
	i, err := strconv.Atoi(n)
	if !ok || err != nil || i < 0 || i >= len(s.parts) {
		return partition{}, false
	}
	return s.parts[i], true
}

// eventHash is an event's hash as stored.
type eventHash struct {
	ev       storage.Event
	attempts []dlq.Attempt
	status   storage.Status
	due, fin time.Time
	lu       time.Time
}

func (s *Store) getEvent(ctx context.Context, p partition, id string) (*eventHash, error) {
	m, err := s.c.HGetAll(ctx, p.ev(id)).Result()
	if err != nil {
		return nil, err
	}
	if len(m) == 0 || m["ev"] == "" {
		return nil, nil
	}
	h := &eventHash{status: storage.Status(m["st"])}
	if err := json.Unmarshal([]byte(m["ev"]), &h.ev); err != nil {
		return nil, fmt.Errorf("decoding event %s: %v", id, err)
	}
	if a := m["att"]; a != "" {
		if err := json.Unmarshal([]byte(a), &h.attempts); err != nil {
			return nil, fmt.Errorf("decoding attempts of %s: %v", id, err)
		}
	}
	num := func(k string) time.Time { v, _ := strconv.ParseInt(m[k], 10, 64); return fromMS(v) }
	h.due, h.fin, h.lu = num("due"), num("fin"), num("lu")
	return h, nil
}

// Lookup implements storage.Store.
func (s *Store) Lookup(ctx context.Context, source, eventID string) (*storage.EventInfo, error) {
	now := time.Now()
	ck := claimKeyText(source, eventID)
	p := s.partitionOf(ck)
	id, err := s.c.Get(ctx, p.ids(ck)).Result()
	if errors.Is(err, redis.Nil) {
		id, err = s.c.Get(ctx, p.claim(ck)).Result()
	}
	if errors.Is(err, redis.Nil) {
		// events without a provider id are found by their internal id
		id, p, err = eventID, s.partitionOf(eventID), nil
	}
	if err != nil {
		return nil, unavailable(err)
	}
	h, err := s.getEvent(ctx, p, id)
	if err != nil {
		return nil, unavailable(err)
	}
	if h != nil && h.ev.Source == source {
		st := h.status
		if st == storage.StatusInFlight && !h.lu.After(now) {
			st = storage.StatusQueued
		}
		info := &storage.EventInfo{ID: h.ev.ID, EventID: h.ev.EventID, Source: h.ev.Source, Status: st,
			ReceivedAt: h.ev.ReceivedAt, FinishedAt: h.fin, Attempts: h.attempts}
		if st == storage.StatusQueued {
			info.NextAttempt = h.due
		}
		return info, nil
	}
	e, err := s.getEntry(ctx, p, id)
	if err == nil && e.Source == source {
		return &storage.EventInfo{ID: e.ID, EventID: e.EventID, Source: e.Source, Status: storage.StatusDead,
			ReceivedAt: e.ReceivedAt, FinishedAt: e.CreatedAt, Attempts: e.Attempts}, nil
	}
	if err != nil && !errors.Is(err, dlq.ErrNotFound) {
		return nil, unavailable(err)
	}
	return nil, storage.ErrNotFound
}

// Counts implements storage.Store: one script a partition, in one round
// trip.
func (s *Store) Counts(ctx context.Context) (storage.Counts, error) {
	calls := make([]scriptCall, len(s.parts))
	for i, p := range s.parts {
		calls[i] = scriptCall{keys: []string{p.key("lanes"), p.key("inflight"), p.key("dlqopen")}, args: []any{p.lanePrefix()}}
	}
	cmds, err := s.evalPipelined(ctx, countsScript, calls)
	if err != nil {
		return storage.Counts{}, unavailable(err)
	}
	var c storage.Counts
	for _, cmd := range cmds {
		v, _ := cmd.Val().([]any)
		if len(v) != 3 {
			continue
		}
		jobs, _ := v[0].(int64)
		leased, _ := v[1].(int64)
		open, _ := v[2].(int64)
		c.InFlight += int(leased)
		c.Queued += int(jobs - leased)
		c.Dead += int(open)
	}
	return c, nil
}

// QueueBySource implements storage.Store: each lane's jobs are counted in
// Redis; only the records of jobs due later (leased, or waiting for a
// retry) are read.
func (s *Store) QueueBySource(ctx context.Context) (map[string]storage.Counts, error) {
	now := ms(time.Now())
	calls := make([]scriptCall, len(s.parts))
	for i, p := range s.parts {
		calls[i] = scriptCall{keys: []string{p.key("lanes")}, args: []any{now, p.lanePrefix(), p.evPrefix()}}
	}
	cmds, err := s.evalPipelined(ctx, laneCountsScript, calls)
	if err != nil {
		return nil, unavailable(err)
	}
	out := map[string]storage.Counts{}
	for _, cmd := range cmds {
		v, _ := cmd.Val().([]any)
		for j := 0; j+2 < len(v); j += 3 {
			lane, _ := v[j].(string)
			jobs, _ := v[j+1].(int64)
			leased, _ := v[j+2].(int64)
			n := out[lane]
			n.InFlight += int(leased)
			n.Queued += int(jobs - leased)
			out[lane] = n
		}
	}
	return out, nil
}

// scanFields reads the given hash fields of every member of each
// partition's sorted set index (e.g. "due"), 500 per round trip, calling fn
// with the values (nil where absent). Meant for operator views and metrics.
func (s *Store) scanFields(ctx context.Context, index string, hashKey func(partition, string) string,
	fields []string, fn func(p partition, id string, vals []any)) error {
	for _, p := range s.parts {
		ids, err := s.c.ZRange(ctx, p.key(index), 0, -1).Result()
		if err != nil {
			return unavailable(err)
		}
		for start := 0; start < len(ids); start += 500 {
			chunk := ids[start:min(start+500, len(ids))]
			cmds := make([]*redis.SliceCmd, len(chunk))
			_, err := s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
				for i, id := range chunk {
					cmds[i] = pipe.HMGet(ctx, hashKey(p, id), fields...)
				}
				return nil
			})
			if err != nil && !errors.Is(err, redis.Nil) {
				return unavailable(err)
			}
			for i, c := range cmds {
				if v := c.Val(); len(v) == len(fields) {
					fn(p, chunk[i], v)
				}
			}
		}
	}
	return nil
}

// getEntry reads a DLQ entry; dlq.ErrNotFound when absent.
func (s *Store) getEntry(ctx context.Context, p partition, id string) (*dlq.Entry, error) {
	v, err := s.c.HGet(ctx, p.dlqEntry(id), "json").Result()
	if errors.Is(err, redis.Nil) {
		return nil, dlq.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	e := new(dlq.Entry)
	if err := json.Unmarshal([]byte(v), e); err != nil {
		return nil, fmt.Errorf("decoding dlq entry %s: %v", id, err)
	}
	return e, nil
}

// findEntry locates a DLQ entry by id: the partition is not derivable from
// the id alone, so all partitions are asked in one pipeline.
func (s *Store) findEntry(ctx context.Context, id string) (partition, *dlq.Entry, error) {
	cmds := make([]*redis.StringCmd, len(s.parts))
	_, err := s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i, p := range s.parts {
			cmds[i] = pipe.HGet(ctx, p.dlqEntry(id), "json")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return partition{}, nil, unavailable(err)
	}
	for i, c := range cmds {
		if v, err := c.Result(); err == nil {
			e := new(dlq.Entry)
			if err := json.Unmarshal([]byte(v), e); err != nil {
				return partition{}, nil, unavailable(fmt.Errorf("decoding dlq entry %s: %v", id, err))
			}
			return s.parts[i], e, nil
		}
	}
	return partition{}, nil, dlq.ErrNotFound
}

// DLQCounts implements storage.Store. It reads two small fields of every
// entry (not the entries with their payloads): meant for metrics scraped
// every few seconds at most (the collector caches it).
func (s *Store) DLQCounts(ctx context.Context) (map[string]map[dlq.Status]int, error) {
	out := map[string]map[dlq.Status]int{}
	err := s.scanFields(ctx, "dlqidx", partition.dlqEntry, []string{"src", "st"}, func(p partition, id string, v []any) {
		if v[1] == nil {
			return // removed meanwhile
		}
		src, _ := v[0].(string)
		st, _ := v[1].(string)
		if src == "" { // written before the src field existed
			e, err := s.getEntry(ctx, p, id)
			if err != nil {
				return
			}
			src = e.Source
		}
		if out[src] == nil {
			out[src] = map[dlq.Status]int{}
		}
		out[src][dlq.Status(st)]++
	})
	return out, err
}

// DLQGet implements storage.Store.
func (s *Store) DLQGet(ctx context.Context, id string) (*dlq.Entry, error) {
	_, e, err := s.findEntry(ctx, id)
	return e, err
}

// DLQRetry implements storage.Store.
func (s *Store) DLQRetry(ctx context.Context, id string, due time.Time) error {
	now := time.Now()
	p, e, err := s.findEntry(ctx, id)
	if err != nil {
		return err
	}
	// an event without a provider id carries its internal id as event id
	ev := storage.Event{ID: e.ID, EventID: e.EventID, Dedupe: e.EventID != e.ID, Source: e.Source, Upstream: e.Upstream,
		Headers: e.Headers, Body: e.Payload, ReceivedAt: e.ReceivedAt}
	if h, err := s.getEvent(ctx, p, id); err != nil {
		return unavailable(err)
	} else if h != nil {
		ev.Dedupe = h.ev.Dedupe
	}
	evJSON, _ := json.Marshal(ev)
	attJSON, _ := json.Marshal(e.Attempts)
	e.Status, e.Retries, e.UpdatedAt = dlq.StatusRetried, e.Retries+1, now
	entryJSON, _ := json.Marshal(e)
	ck := ""
	if ev.Dedupe {
		ck = claimKeyText(ev.Source, ev.EventID)
	}
	lane := storage.LaneOf(&ev)
	v, err := s.run(ctx, p, dlqRetryScript,
		[]string{p.dlqEntry(id), p.key("dlqopen"), p.ev(id), p.key("done"), p.lane(lane), p.key("lanes")},
		id, ms(due), entryJSON, evJSON, attJSON, len(e.Attempts), ck, e.Source, lane)
	if err != nil {
		return unavailable(err)
	}
	return scriptStatus(v)
}

func scriptStatus(v any) error {
	switch n, _ := v.(int64); n {
	case 1:
		return nil
	case 0:
		return dlq.ErrNotFound
	}
	return dlq.ErrConflict
}

// DLQSetStatus implements storage.Store.
func (s *Store) DLQSetStatus(ctx context.Context, id string, status dlq.Status, text string, now time.Time) error {
	switch status {
	case dlq.StatusInvestigating, dlq.StatusResolved, dlq.StatusDiscarded:
	default:
		return fmt.Errorf("%w: cannot set status %q", dlq.ErrConflict, status)
	}
	p, e, err := s.findEntry(ctx, id)
	if err != nil {
		return err
	}
	e.Status, e.UpdatedAt = status, now
	switch status {
	case dlq.StatusResolved:
		e.Resolution = text
	case dlq.StatusDiscarded:
		e.Reason = text
	}
	entryJSON, _ := json.Marshal(e)
	v, err := s.run(ctx, p, dlqStatusScript, []string{p.dlqEntry(id), p.key("dlqopen")}, id, string(status), entryJSON)
	if err != nil {
		return unavailable(err)
	}
	return scriptStatus(v)
}

// dlqPageScan bounds how many index entries one partition reads per round
// while filling a page.
const dlqPageScan = 200

// DLQList implements storage.Store: each partition yields its newest
// matching entries below the cursor, and the pages are merged.
func (s *Store) DLQList(ctx context.Context, f dlq.Filter) (dlq.Page, error) {
	page := dlq.Page{Entries: []dlq.Entry{}}
	limit := f.EffectiveLimit()
	curMS, curID := int64(math.MaxInt64), ""
	if f.Cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(f.Cursor)
		msPart, idPart, ok := strings.Cut(string(raw), ":")
		if err != nil || !ok {
			return page, dlq.ErrInvalidCursor
		}
		if curMS, err = strconv.ParseInt(msPart, 10, 64); err != nil {
			return page, dlq.ErrInvalidCursor
		}
		curID = idPart
	}
	minMS := "-inf"
	if !f.Since.IsZero() {
		minMS = strconv.FormatInt(ms(f.Since), 10)
	}
	type item struct {
		at int64
		e  dlq.Entry
	}
	var all []item
	for _, p := range s.parts {
		var got []item
		maxScore := strconv.FormatInt(curMS, 10)
		if curMS == math.MaxInt64 {
			maxScore = "+inf"
		}
		offset := int64(0)
		for len(got) < limit {
			zs, err := s.c.ZRevRangeByScoreWithScores(ctx, p.key("dlqidx"), &redis.ZRangeBy{
				Max: maxScore, Min: minMS, Offset: offset, Count: dlqPageScan}).Result()
			if err != nil {
				return page, unavailable(err)
			}
			if len(zs) == 0 {
				break
			}
			offset += int64(len(zs))
			cmds := make([]*redis.StringCmd, len(zs))
			_, err = s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
				for i, z := range zs {
					cmds[i] = pipe.HGet(ctx, p.dlqEntry(z.Member.(string)), "json")
				}
				return nil
			})
			if err != nil && !errors.Is(err, redis.Nil) {
				return page, unavailable(err)
			}
			for i, z := range zs {
				at, id := int64(z.Score), z.Member.(string)
				if at == curMS && id >= curID {
					continue // at or before the cursor
				}
				v, err := cmds[i].Result()
				if err != nil {
					continue // removed meanwhile
				}
				var e dlq.Entry
				if json.Unmarshal([]byte(v), &e) != nil || !f.Matches(&e) {
					continue
				}
				e.Payload, e.Headers = nil, nil
				got = append(got, item{at, e})
			}
			if len(zs) < dlqPageScan {
				break
			}
		}
		all = append(all, got...)
	}
	slices.SortFunc(all, func(a, b item) int {
		if a.at != b.at {
			return cmpInt(b.at, a.at)
		}
		return strings.Compare(b.e.ID, a.e.ID)
	})
	for i, it := range all {
		if i == limit {
			last := all[limit-1]
			page.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(last.at, 10) + ":" + last.e.ID))
			break
		}
		page.Entries = append(page.Entries, it.e)
	}
	return page, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// pausedKey holds the paused sources (one small set, outside the partitions).
func (s *Store) pausedKey() string { return "{" + s.opts.Prefix + ":meta}:paused" }

// SetPaused implements storage.Store.
func (s *Store) SetPaused(ctx context.Context, source string, paused bool) error {
	var err error
	if paused {
		err = s.c.SAdd(ctx, s.pausedKey(), source).Err()
	} else {
		err = s.c.SRem(ctx, s.pausedKey(), source).Err()
	}
	return unavailable(err)
}

// Paused implements storage.Store.
func (s *Store) Paused(ctx context.Context) (map[string]bool, error) {
	members, err := s.c.SMembers(ctx, s.pausedKey()).Result()
	if err != nil {
		return nil, unavailable(err)
	}
	out := make(map[string]bool, len(members))
	for _, m := range members {
		out[m] = true
	}
	return out, nil
}

// statsKey is the hash of one minute's counters, or the all-time one.
func (s *Store) statsKey(minute int64) string {
	if minute == 0 {
		return "{" + s.opts.Prefix + ":meta}:stats:all"
	}
	return "{" + s.opts.Prefix + ":meta}:stats:m:" + strconv.FormatInt(minute, 10)
}

// statsBucketTTL is how long minute buckets live.
const statsBucketTTL = 48 * time.Hour

// AddStats implements storage.Store.
func (s *Store) AddStats(ctx context.Context, at time.Time, deltas map[string]map[string]int64) error {
	minute := at.Unix() / 60
	_, err := s.c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		for source, m := range deltas {
			for name, d := range m {
				field := source + "\x00" + name
				hincrByOnce(ctx, pipe, s.statsKey(0), field, d) // a replayed MULTI would count twice
				hincrByOnce(ctx, pipe, s.statsKey(minute), field, d)
			}
		}
		pipe.Expire(ctx, s.statsKey(minute), statsBucketTTL)
		return nil
	})
	return unavailable(err)
}

// Stats implements storage.Store.
func (s *Store) Stats(ctx context.Context, since time.Time) (map[string]map[string]int64, map[string]map[string]int64, error) {
	from, to := since.Unix()/60, time.Now().Unix()/60
	if to-from > 24*60 {
		from = to - 24*60
	}
	var allCmd *redis.MapStringStringCmd
	var cmds []*redis.MapStringStringCmd
	_, err := s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		allCmd = pipe.HGetAll(ctx, s.statsKey(0))
		for m := from; m <= to; m++ {
			cmds = append(cmds, pipe.HGetAll(ctx, s.statsKey(m)))
		}
		return nil
	})
	if err != nil {
		return nil, nil, unavailable(err)
	}
	add := func(out map[string]map[string]int64, h map[string]string) {
		for field, v := range h {
			source, name, ok := strings.Cut(field, "\x00")
			n, err := strconv.ParseInt(v, 10, 64)
			if !ok || err != nil {
				continue
			}
			if out[source] == nil {
				out[source] = map[string]int64{}
			}
			out[source][name] += n
		}
	}
	recent, all := map[string]map[string]int64{}, map[string]map[string]int64{}
	add(all, allCmd.Val())
	for _, c := range cmds {
		add(recent, c.Val())
	}
	return recent, all, nil
}

// cleanupBatch bounds one round of cleanup per partition.
const cleanupBatch = 500

// Cleanup implements storage.Store. Claims also expire by themselves (TTL).
func (s *Store) Cleanup(ctx context.Context, now time.Time, retention, dlqRetention time.Duration) (int, error) {
	total := 0
	doneCutoff, dlqCutoff := ms(now.Add(-retention)), ms(now.Add(-dlqRetention))
	for _, p := range s.parts {
		for {
			cks, err := s.c.ZRangeByScore(ctx, p.key("claimexp"), &redis.ZRangeBy{
				Min: "-inf", Max: "(" + strconv.FormatInt(ms(now), 10), Count: cleanupBatch}).Result()
			if err != nil {
				return total, unavailable(err)
			}
			for _, ck := range cks {
				if _, err := expireClaimScript.Run(ctx, s.c, []string{p.claim(ck), p.key("claimexp")}, ck, ms(now)).Result(); err != nil {
					return total, unavailable(err)
				}
				total++
			}
			if len(cks) < cleanupBatch {
				break
			}
		}
		for {
			ids, err := s.c.ZRangeByScore(ctx, p.key("done"), &redis.ZRangeBy{
				Min: "-inf", Max: "(" + strconv.FormatInt(doneCutoff, 10), Count: cleanupBatch}).Result()
			if err != nil {
				return total, unavailable(err)
			}
			for _, id := range ids {
				ck, err := s.c.HGet(ctx, p.ev(id), "ck").Result()
				if err != nil && !errors.Is(err, redis.Nil) {
					return total, unavailable(err)
				}
				if _, err := removeEventScript.Run(ctx, s.c, []string{p.ev(id), p.key("done"), p.ids(ck)}, id, doneCutoff).Result(); err != nil {
					return total, unavailable(err)
				}
				total++
			}
			if len(ids) < cleanupBatch {
				break
			}
		}
		if dlqRetention <= 0 {
			continue
		}
		for {
			ids, err := s.c.ZRangeByScore(ctx, p.key("dlqidx"), &redis.ZRangeBy{
				Min: "-inf", Max: "(" + strconv.FormatInt(dlqCutoff, 10), Count: cleanupBatch}).Result()
			if err != nil {
				return total, unavailable(err)
			}
			for _, id := range ids {
				if _, err := removeEntryScript.Run(ctx, s.c, []string{p.dlqEntry(id), p.key("dlqidx"), p.key("dlqopen")}, id, dlqCutoff).Result(); err != nil {
					return total, unavailable(err)
				}
				total++
			}
			if len(ids) < cleanupBatch {
				break
			}
		}
	}
	return total, nil
}

func newToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func randInt(n int) int {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return int(uint32(b[0])|uint32(b[1])<<8|uint32(b[2])<<16|uint32(b[3])<<24) % n
}

// PartitionKeys returns one key of each partition (tests, diagnostics: which
// slot and node a partition lives on).
func (s *Store) PartitionKeys() []string {
	keys := make([]string, len(s.parts))
	for i, p := range s.parts {
		keys[i] = p.key("lanes")
	}
	return keys
}
