package ceiling

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/groupcommit"
	"github.com/hookline/hookline/storage"
)

// RedisQueue is the Redis counterpart of Store: the least work any queue
// kept in Redis must do per job, to measure what a Redis store could reach
// on a machine (the ceiling of the Redis targets). Every job is in Redis,
// under one hash tag: its event JSON, its payload record (body and
// headers, raw, as the Redis store keeps them) and its attempts in three
// hashes, its due time in one sorted set, its lease token in a hash, and a
// finished job's time in a sorted set. An enqueue is one script of five
// commands (the claim read and written, the payload, the job, its due
// time), the scripts of concurrent enqueues sent in one pipeline, as the
// Redis store sends its own. A lease is one script of six commands,
// whatever the number of jobs it takes (the due jobs found, moved to the
// lease's end, their tokens written, their events, attempts and payloads
// read); the finishes of concurrent workers share one script of at most
// six commands (the tokens checked, then each job re-queued or marked
// done). No lanes, fairness, counters, partitions or DLQ entries: what a
// real store adds to that is its own cost. Nothing is ever removed (a
// finished job's event, payload and attempts stay): the deletions a real
// store makes for retention are not counted either.
//
// Everything else (the DLQ, lookups, stats, pauses) goes to the wrapped
// store. It ignores order keys and the gate but for a hold of every lane
// its own process has given it jobs of (hold.go), and marks a job
// finished dead done, without a DLQ entry.
type RedisQueue struct {
	storage.Store

	c        redis.UniversalClient
	q        string // sorted set: job id -> due (a leased job: its lease's end) ms
	jobs     string // hash: job id -> event JSON, without its payload
	payloads string // hash: payload id -> payload record (storage.SharePayload)
	att      string // hash: job id -> attempts JSON
	leases   string // hash: job id -> lease token
	done     string // sorted set: job id -> finished ms
	claims   string // key prefix of the events' claims
	enqueues *groupcommit.Batcher[enqueueReq, []any]
	finishes *groupcommit.Batcher[finishReq, bool]
	seen     lanesSeen // by this process, for a hold of every lane
}

// enqueueReq is one event's call of the enqueue script.
type enqueueReq struct {
	keys []string
	args []any
}

// finishReq is one job's outcome for the finish script.
type finishReq struct {
	id, token, status string
	due               int64
	attempts          []byte
}

// WrapRedis puts a queue kept in Redis through c, under keys starting
// with prefix, in front of st. Close closes st, not c.
func WrapRedis(st storage.Store, c redis.UniversalClient, prefix string) *RedisQueue {
	k := "{" + prefix + "}:"
	r := &RedisQueue{Store: st, c: c, q: k + "q", jobs: k + "jobs", payloads: k + "payloads", att: k + "att", leases: k + "leases", done: k + "done", claims: k + "claim:"}
	r.enqueues = groupcommit.New(r.enqueueRound, groupcommit.Options[enqueueReq]{MaxBatch: 128})
	r.finishes = groupcommit.New(r.finishRound, groupcommit.Options[finishReq]{MaxBatch: 128})
	return r
}

// redisEnqueue claims the event id (a duplicate answers the holder) and
// queues its jobs.
//
//	KEYS: claim (of the same hash tag, claimed or not), q, jobs, payloads
//	ARGV: claim ms (0: no claim), event's id, now ms, payload id, payload,
//	      then job id, job JSON pairs
//	returns {} when queued, or {the id holding the claim, its ms left}
var redisEnqueue = redis.NewScript(`
if ARGV[1] ~= '0' then
	local held = redis.call('GET', KEYS[1])
	if held then return {held, redis.call('PTTL', KEYS[1])} end
	redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[1])
end
redis.call('HSET', KEYS[4], ARGV[4], ARGV[5])
for i = 6, #ARGV, 2 do
	redis.call('HSET', KEYS[3], ARGV[i], ARGV[i + 1])
	redis.call('ZADD', KEYS[2], ARGV[3], ARGV[i])
end
return {}
`)

// Enqueue implements storage.Queue.
func (r *RedisQueue) Enqueue(ctx context.Context, ev *storage.Event, dedupeUntil time.Time) (storage.EnqueueResult, error) {
	jobs, _, err := storage.DeliveriesOf(ev)
	if err != nil {
		return storage.EnqueueResult{}, err
	}
	now := time.Now()
	window := int64(0) // no claim
	if ev.Dedupe && dedupeUntil.After(now) {
		window = max(dedupeUntil.Sub(now).Milliseconds(), 1)
	}
	payload := storage.SharePayload(jobs, true)
	for i := range jobs {
		r.seen.add(storage.LaneOf(&jobs[i]))
	}
	args := []any{window, ev.ID, now.UnixMilli(), storage.PayloadID(jobs[0].ID), payload}
	for i := range jobs {
		b, err := json.Marshal(&jobs[i])
		if err != nil {
			return storage.EnqueueResult{}, err
		}
		args = append(args, jobs[i].ID, b)
	}
	claim := r.claims + storage.ClaimKey(ev.Source, ev.EventID)
	v, err := r.enqueues.Do(ctx, enqueueReq{keys: []string{claim, r.q, r.jobs, r.payloads}, args: args})
	if err != nil {
		return storage.EnqueueResult{}, errors.Join(storage.ErrUnavailable, err)
	}
	if len(v) == 2 {
		held, _ := v[0].(string)
		left, _ := v[1].(int64)
		return storage.EnqueueResult{Duplicate: true, ID: held, Status: storage.StatusQueued,
			DedupeUntil: now.Add(time.Duration(left) * time.Millisecond)}, nil
	}
	return storage.EnqueueResult{ID: ev.ID, Status: storage.StatusQueued, Due: storage.NamedDue(jobs, now, 0)}, nil
}

// enqueueRound sends a round of concurrent enqueues in one pipeline (one
// round trip), as the Redis store batches its own. Each call is answered
// by its own command; a script the server lost (restart, flush) is loaded
// and only the calls it refused are sent again, so none runs twice.
func (r *RedisQueue) enqueueRound(round []*groupcommit.Call[enqueueReq, []any]) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	send := func(calls []*groupcommit.Call[enqueueReq, []any]) []*redis.Cmd {
		cmds := make([]*redis.Cmd, len(calls))
		_, _ = r.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for i, c := range calls {
				cmds[i] = redisEnqueue.EvalSha(ctx, pipe, c.Req.keys, c.Req.args...)
			}
			return nil
		})
		return cmds
	}
	refused := func(cmd *redis.Cmd) bool {
		return cmd.Err() != nil && redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT")
	}
	cmds := send(round)
	var again []*groupcommit.Call[enqueueReq, []any]
	var where []int
	for i, cmd := range cmds {
		if refused(cmd) {
			again, where = append(again, round[i]), append(where, i)
		}
	}
	if len(again) > 0 {
		if err := redisEnqueue.Load(ctx, r.c).Err(); err != nil {
			for _, c := range again {
				c.Answer(nil, err) // the first answer counts
			}
		} else {
			for k, cmd := range send(again) {
				cmds[where[k]] = cmd
			}
		}
	}
	for i, c := range round {
		c.Answer(cmds[i].Slice())
	}
}

// redisLease leases up to n due jobs, earliest first, or those of the
// named jobs that are due (each named once), in six commands.
//
//	KEYS: q, leases, jobs, att, payloads
//	ARGV: now ms, lease's end ms, n, token prefix, then the jobs named
//	      (none: the earliest due)
//	returns {ids, event JSONs, attempts JSONs, payloads}
var redisLease = redis.NewScript(`
local ids = {}
if #ARGV > 4 then
	local due = redis.call('ZMSCORE', KEYS[1], unpack(ARGV, 5))
	for i = 5, #ARGV do
		local d = due[i - 4]
		if d and tonumber(d) <= tonumber(ARGV[1]) then ids[#ids + 1] = ARGV[i] end
	end
else
	ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
end
if #ids == 0 then return {} end
local z, l = {}, {}
local pl = {}
for i, id in ipairs(ids) do
	pl[i] = string.match(id, '^[^~]*') -- storage.PayloadID
	z[#z + 1] = ARGV[2]
	z[#z + 1] = id
	l[#l + 1] = id
	l[#l + 1] = ARGV[4] .. i
end
redis.call('ZADD', KEYS[1], unpack(z))
redis.call('HSET', KEYS[2], unpack(l))
return {ids, redis.call('HMGET', KEYS[3], unpack(ids)), redis.call('HMGET', KEYS[4], unpack(ids)),
	redis.call('HMGET', KEYS[5], unpack(pl))}
`)

// maxLease is the most jobs a lease takes: its script passes them to one
// command each, and Lua's unpack fails past about 8,000 values.
const maxLease = 4000

// Lease implements storage.Queue: up to n jobs (at most maxLease) due at
// or before now, earliest first, none while the gate holds every lane
// seen.
func (r *RedisQueue) Lease(ctx context.Context, now time.Time, n int, lease time.Duration, gate *storage.Gate) ([]*storage.Job, error) {
	if n <= 0 || r.seen.held(gate) {
		return nil, nil
	}
	return r.lease(ctx, now, lease, min(n, maxLease))
}

// lease runs redisLease for n jobs, or for the jobs named.
func (r *RedisQueue) lease(ctx context.Context, now time.Time, lease time.Duration, n int, named ...any) ([]*storage.Job, error) {
	until := now.Add(lease)
	tok := storage.NewLeaseToken() + ":"
	args := append([]any{now.UnixMilli(), until.UnixMilli(), n, tok}, named...)
	v, err := redisLease.Run(ctx, r.c, []string{r.q, r.leases, r.jobs, r.att, r.payloads}, args...).Slice()
	if err != nil {
		return nil, errors.Join(storage.ErrUnavailable, err)
	}
	if len(v) != 4 {
		return nil, nil
	}
	ids, _ := v[0].([]any)
	evs, _ := v[1].([]any)
	atts, _ := v[2].([]any)
	pls, _ := v[3].([]any)
	out := make([]*storage.Job, 0, len(ids))
	for i := range ids {
		js, _ := evs[i].(string)
		job := &storage.Job{Lease: tok + strconv.Itoa(i+1), LeaseUntil: until}
		if err := json.Unmarshal([]byte(js), &job.Event); err != nil {
			return out, fmt.Errorf("decoding job %v: %w", ids[i], err)
		}
		var payload []byte // nil: none, so that JoinPayload says it is missing
		if pl, ok := pls[i].(string); ok {
			payload = []byte(pl)
		}
		if err := storage.JoinPayload(&job.Event, payload); err != nil {
			return out, err
		}
		if a, _ := atts[i].(string); a != "" {
			if err := json.Unmarshal([]byte(a), &job.Attempts); err != nil {
				return out, fmt.Errorf("decoding attempts of %v: %w", ids[i], err)
			}
		}
		out = append(out, job)
	}
	return out, nil
}

// LeaseNamed implements storage.Queue: those of the jobs named (the
// first maxLease) that are due, each once.
func (r *RedisQueue) LeaseNamed(ctx context.Context, now time.Time, cands []storage.Candidate, lease time.Duration) ([]*storage.Job, error) {
	seen := map[string]bool{}
	var named []any
	for _, c := range cands {
		if !seen[c.ID] && len(named) < maxLease {
			seen[c.ID] = true
			named = append(named, c.ID)
		}
	}
	if len(named) == 0 {
		return nil, nil
	}
	return r.lease(ctx, now, lease, len(named), named...)
}

// NextDue implements storage.Queue: nothing while the gate holds every
// lane seen.
func (r *RedisQueue) NextDue(ctx context.Context, gate *storage.Gate) (time.Time, bool, error) {
	if r.seen.held(gate) {
		return time.Time{}, false, nil
	}
	z, err := r.c.ZRangeWithScores(ctx, r.q, 0, 0).Result()
	if err != nil {
		return time.Time{}, false, errors.Join(storage.ErrUnavailable, err)
	}
	if len(z) == 0 {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(int64(z[0].Score)), true, nil
}

// redisFinish records the outcomes of a round's jobs whose token still
// holds, in at most six commands.
//
//	KEYS: q, leases, att, done
//	ARGV: now ms, then per job: id, token, queued|done, due ms, attempts JSON
//	returns 1 or 0 (lease lost) per job
var redisFinish = redis.NewScript(`
local ids = {}
for i = 2, #ARGV, 5 do ids[#ids + 1] = ARGV[i] end
local held = redis.call('HMGET', KEYS[2], unpack(ids))
local out, gone, rem, back, att, fin = {}, {}, {}, {}, {}, {}
for k, id in ipairs(ids) do
	local b = 2 + (k - 1) * 5
	if held[k] ~= ARGV[b + 1] then
		out[k] = 0
	else
		out[k] = 1
		gone[#gone + 1] = id
		if ARGV[b + 2] == 'queued' then
			back[#back + 1] = ARGV[b + 3]
			back[#back + 1] = id
			att[#att + 1] = id
			att[#att + 1] = ARGV[b + 4]
		else
			rem[#rem + 1] = id
			fin[#fin + 1] = ARGV[1]
			fin[#fin + 1] = id
		end
	end
end
if #gone > 0 then redis.call('HDEL', KEYS[2], unpack(gone)) end
if #rem > 0 then
	redis.call('ZREM', KEYS[1], unpack(rem))
	redis.call('ZADD', KEYS[4], unpack(fin))
end
if #back > 0 then
	redis.call('ZADD', KEYS[1], unpack(back))
	redis.call('HSET', KEYS[3], unpack(att))
end
return out
`)

// finishRound runs one round of finishes in one script.
func (r *RedisQueue) finishRound(round []*groupcommit.Call[finishReq, bool]) {
	args := make([]any, 0, 1+5*len(round))
	args = append(args, time.Now().UnixMilli())
	for _, c := range round {
		args = append(args, c.Req.id, c.Req.token, c.Req.status, c.Req.due, c.Req.attempts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := redisFinish.Run(ctx, r.c, []string{r.q, r.leases, r.att, r.done}, args...).Int64Slice()
	for i, c := range round {
		switch {
		case err != nil:
			c.Answer(false, errors.Join(storage.ErrUnavailable, err))
		case i >= len(res):
			c.Answer(false, fmt.Errorf("unexpected finish reply %v", res))
		default:
			c.Answer(res[i] == 1, nil)
		}
	}
}

// Finish implements storage.Queue: a retried or released job is queued
// again at out.Due, its attempts kept; a delivered or dead one is done.
func (r *RedisQueue) Finish(ctx context.Context, job *storage.Job, out storage.Outcome) error {
	req := finishReq{id: job.ID, token: job.Lease, status: "done", attempts: []byte("")}
	switch out.Result {
	case storage.Retry, storage.Release:
		att := job.Attempts
		if out.Attempt != nil {
			att = append(att[:len(att):len(att)], *out.Attempt)
		}
		b, err := json.Marshal(att)
		if err != nil {
			return err
		}
		req.status, req.due, req.attempts = "queued", out.Due.UnixMilli(), b
	case storage.Delivered, storage.Dead:
	default:
		return fmt.Errorf("unknown result %d", out.Result)
	}
	held, err := r.finishes.Do(ctx, req)
	if err != nil {
		return err
	}
	if !held {
		return storage.ErrLeaseLost
	}
	return nil
}

// AllLanes is the one lane RedisQueue reports its jobs under: it keeps no
// lanes, and the stats (what a load run polls for the backlog) read the
// queue's sizes by lane.
const AllLanes = "(all)"

// sizes is the queue's sizes from Redis: a job whose lease ran out still
// counts as in flight until it is leased again.
func (r *RedisQueue) sizes(ctx context.Context) (storage.Counts, error) {
	var all, leased *redis.IntCmd
	if _, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		all, leased = p.ZCard(ctx, r.q), p.HLen(ctx, r.leases)
		return nil
	}); err != nil {
		return storage.Counts{}, errors.Join(storage.ErrUnavailable, err)
	}
	return storage.Counts{Queued: int(all.Val() - leased.Val()), InFlight: int(leased.Val())}, nil
}

// byLane is c under AllLanes, or nothing for an empty queue.
func byLane(c storage.Counts) map[string]storage.Counts {
	if c == (storage.Counts{}) {
		return map[string]storage.Counts{}
	}
	return map[string]storage.Counts{AllLanes: c}
}

// Counts implements storage.Operations: the queue's sizes from Redis, the
// DLQ's from the wrapped store.
func (r *RedisQueue) Counts(ctx context.Context) (storage.Counts, error) {
	c, err := r.Store.Counts(ctx)
	if err != nil {
		return c, err
	}
	q, err := r.sizes(ctx)
	if err != nil {
		return c, err
	}
	c.Queued, c.InFlight = q.Queued, q.InFlight
	return c, nil
}

// QueueBySource implements storage.Operations: every job under AllLanes.
func (r *RedisQueue) QueueBySource(ctx context.Context) (map[string]storage.Counts, error) {
	return r.QueueByLane(ctx)
}

// QueueByLane implements storage.Operations: every job under AllLanes.
func (r *RedisQueue) QueueByLane(ctx context.Context) (map[string]storage.Counts, error) {
	q, err := r.sizes(ctx)
	if err != nil {
		return nil, err
	}
	return byLane(q), nil
}

// QueueHeads implements storage.Operations: the earliest due job (or
// lease's end) under AllLanes.
func (r *RedisQueue) QueueHeads(ctx context.Context) (map[string]time.Time, error) {
	due, ok, err := r.NextDue(ctx, nil)
	if err != nil || !ok {
		return map[string]time.Time{}, err
	}
	return map[string]time.Time{AllLanes: due}, nil
}

// Close stops the enqueue and finish rounds and closes the wrapped store
// (not the Redis client).
func (r *RedisQueue) Close() error {
	r.enqueues.Close()
	r.finishes.Close()
	return r.Store.Close()
}

// Interface guards
var _ storage.Store = (*RedisQueue)(nil)
