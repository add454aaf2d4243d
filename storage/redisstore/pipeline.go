package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/internal/groupcommit"
	"github.com/hookline/hookline/storage"
)

// scriptCall is one invocation of a script.
type scriptCall struct {
	keys []string
	args []any
}

// evalPipelined runs several invocations of one script in a single round
// trip (per Cluster node). Scripts the server does not have yet are loaded
// and the pipeline is sent once more. Each command carries its own result;
// err is the first failure, if any. Scripts that are not retryable are
// sent at most once (see retryable). The store's layout is checked first
// (see CheckLayout). A panic (in go-redis, in a hook) is returned as a
// *storage.PanicError, with no commands.
func (s *Store) evalPipelined(ctx context.Context, sc *redis.Script, calls []scriptCall) (cmds []*redis.Cmd, err error) {
	defer func() {
		if r := recover(); r != nil {
			cmds, err = nil, storage.Recovered(r)
		}
	}()
	if err := s.CheckLayout(ctx); err != nil {
		return nil, err
	}
	run := func(calls []scriptCall) ([]*redis.Cmd, error) {
		cmds := make([]*redis.Cmd, len(calls))
		_, err := s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for i, c := range calls {
				cmds[i] = evalSha(ctx, pipe, sc, c.keys, c.args)
			}
			return nil
		})
		return cmds, err
	}
	cmds, err = run(calls)
	if err == nil || !isNoScript(cmds) {
		return cmds, err
	}
	// a node without the script (restarted, failed over): load it and send
	// again only the calls that did not run; the others must not run twice
	if lerr := sc.Load(ctx, s.c).Err(); lerr != nil {
		return cmds, lerr
	}
	var again []scriptCall
	var where []int
	for i, c := range cmds {
		if noScript(c.Err()) {
			again = append(again, calls[i])
			where = append(where, i)
		}
	}
	retried, err2 := run(again)
	for k, i := range where {
		cmds[i] = retried[k]
	}
	err = nil
	for _, c := range cmds {
		if c.Err() != nil {
			err = c.Err()
			break
		}
	}
	if err == nil {
		err = err2
	}
	return cmds, err
}

func isNoScript(cmds []*redis.Cmd) bool {
	for _, c := range cmds {
		if noScript(c.Err()) {
			return true
		}
	}
	return false
}

func noScript(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") }

// batcher sends concurrent invocations of one script together: the first
// waiting call goes at once, and calls arriving meanwhile share the next
// round trip (groupcommit, as group commit does for the embedded store).
// Workers finishing deliveries at the same time cost one round trip, not
// sixteen. A call whose context ends before its round trip is never sent;
// a panic fails the calls of its batch with a *storage.PanicError; after
// close, calls fail with redis.ErrClosed.
type batcher struct {
	s  *Store
	sc *redis.Script
	b  *groupcommit.Batcher[scriptCall, any]
	// many: sc takes the calls of one partition together (manyCall)
	many bool
}

const maxBatch = 128

func newBatcher(s *Store, sc *redis.Script) *batcher {
	b := &batcher{s: s, sc: sc}
	b.b = groupcommit.New(b.send, groupcommit.Options[scriptCall]{
		MaxBatch: maxBatch,
		Closed:   redis.ErrClosed,
		Recover:  func(v any) error { return storage.Recovered(v) },
	})
	return b
}

// newManyBatcher is a batcher whose script sc runs the calls of a batch
// that go to one partition in one invocation (finishManyScript): a
// script run per partition per round trip, not per call.
func newManyBatcher(s *Store, sc *redis.Script) *batcher {
	b := newBatcher(s, sc)
	b.many = true
	return b
}

// do runs one invocation in the next batch.
func (b *batcher) do(ctx context.Context, call scriptCall) (any, error) {
	return b.b.Do(ctx, call)
}

// send runs one batch in one pipelined round trip and answers each call.
func (b *batcher) send(batch []*groupcommit.Call[scriptCall, any]) {
	calls := make([]scriptCall, len(batch))
	for i, c := range batch {
		calls[i] = c.Req
	}
	// the batch outlives any one caller's context; bound it on its own
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var groups [][]int
	if b.many {
		calls, groups = manyCalls(calls)
	}
	cmds, err := b.s.evalPipelined(ctx, b.sc, calls)
	for i := range calls {
		v, cerr := any(nil), err
		if i < len(cmds) && cmds[i] != nil {
			v, cerr = cmds[i].Result()
		}
		if !b.many {
			batch[i].Answer(v, cerr)
			continue
		}
		replies, _ := v.([]any)
		for k, j := range groups[i] {
			switch {
			case cerr != nil:
				batch[j].Answer(nil, cerr)
			case k >= len(replies):
				batch[j].Answer(nil, fmt.Errorf("unexpected reply %v", v))
			default:
				if msg, ok := replies[k].(string); ok && strings.HasPrefix(msg, "ERR ") {
					batch[j].Answer(nil, errors.New(strings.TrimPrefix(msg, "ERR ")))
				} else {
					batch[j].Answer(replies[k], nil)
				}
			}
		}
	}
}

// manyCalls merges calls into one per partition (the hash tag of its
// first key), in the form finishManyScript takes: keys one after the
// other, and each call's number of keys, number of args and args. groups
// lists, for each merged call, the calls it holds, in order.
func manyCalls(calls []scriptCall) (merged []scriptCall, groups [][]int) {
	at := map[string]int{}
	for i, c := range calls {
		tag, _, _ := strings.Cut(c.keys[0], "}")
		g, ok := at[tag]
		if !ok {
			g = len(merged)
			at[tag] = g
			merged = append(merged, scriptCall{})
			groups = append(groups, nil)
		}
		m := &merged[g]
		m.keys = append(m.keys, c.keys...)
		m.args = append(append(m.args, len(c.keys), len(c.args)), c.args...)
		groups[g] = append(groups[g], i)
	}
	return merged, groups
}

func (b *batcher) close() { b.b.Close() }

// readPipelined sends the commands fn queues in one pipeline and returns
// the first failure among them that is not redis.Nil (a key or field that
// is not there, which a read expects): go-redis reports a pipeline's first
// error only, which a redis.Nil ahead of it would hide, and a caller that
// took a failed read for a missing key would act on what it did not read.
func (s *Store) readPipelined(ctx context.Context, fn func(redis.Pipeliner) error) error {
	cmds, err := s.c.Pipelined(ctx, fn)
	for _, c := range cmds {
		if cerr := c.Err(); cerr != nil && !errors.Is(cerr, redis.Nil) {
			return cerr
		}
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	return nil
}
