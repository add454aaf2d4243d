package redisstore

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

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
// round trip (as group commit does for the embedded store). Workers
// finishing deliveries at the same time cost one round trip, not sixteen.
type batcher struct {
	s    *Store
	sc   *redis.Script
	reqs chan batchReq
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

type batchReq struct {
	ctx  context.Context
	call scriptCall
	res  chan batchRes
}

type batchRes struct {
	v   any
	err error
}

const maxBatch = 128

func newBatcher(s *Store, sc *redis.Script) *batcher {
	b := &batcher{s: s, sc: sc, reqs: make(chan batchReq, maxBatch), quit: make(chan struct{}), done: make(chan struct{})}
	go b.loop()
	return b
}

// do runs one invocation in the next batch.
func (b *batcher) do(ctx context.Context, call scriptCall) (any, error) {
	req := batchReq{ctx: ctx, call: call, res: make(chan batchRes, 1)}
	select {
	case b.reqs <- req:
	case <-b.quit:
		return nil, redis.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-req.res:
		return r.v, r.err
	case <-b.done:
		// closed after the request was queued: the loop may have left it
		select {
		case r := <-req.res:
			return r.v, r.err
		default:
			return nil, redis.ErrClosed
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (b *batcher) loop() {
	defer close(b.done)
	batch := make([]batchReq, 0, maxBatch)
	for {
		select {
		case r := <-b.reqs:
			batch = append(batch[:0], r)
		case <-b.quit:
			for {
				select {
				case r := <-b.reqs:
					r.res <- batchRes{err: redis.ErrClosed}
				default:
					return
				}
			}
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case r := <-b.reqs:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		b.send(batch)
		clear(batch) // let the answered requests go
	}
}

// send runs one batch and answers each of its requests exactly once. A
// panic fails the requests not answered yet instead of killing the process.
func (b *batcher) send(batch []batchReq) {
	answered := 0
	defer func() {
		if r := recover(); r != nil {
			err := storage.Recovered(r)
			for _, req := range batch[answered:] {
				req.res <- batchRes{err: err}
			}
		}
	}()
	calls := make([]scriptCall, len(batch))
	for i, r := range batch {
		calls[i] = r.call
	}
	// the batch outlives any one caller's context; bound it on its own
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmds, err := b.s.evalPipelined(ctx, b.sc, calls)
	for i, r := range batch {
		res := batchRes{err: err}
		if i < len(cmds) && cmds[i] != nil {
			res.v, res.err = cmds[i].Result()
		}
		answered++
		r.res <- res
	}
}

func (b *batcher) close() {
	b.once.Do(func() {
		close(b.quit)
		<-b.done
	})
}
