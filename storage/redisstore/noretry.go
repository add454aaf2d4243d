package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// At most once. go-redis sends a command again when the connection fails
// after the command was written (MaxRetries, 3 by default): the first run
// may well have been applied, only its reply lost. Reads and idempotent
// scripts may run twice; the other writes must not, so they are sent at
// most once, whatever the client's MaxRetries (go-redis's per-command
// NoRetry): a lost reply is an error for the caller, who sees
// ErrUnavailable (the ingress answers 503 and the provider resends, which
// the claim answers as a duplicate; a lost lease just expires).
//
// Per script:
//
//	enqueue        retried: a second run finds the event it stored (its id
//	               is unique) and answers "stored" again, not "duplicate"
//	lease          at most once: a second run would lease nothing (the jobs
//	               are no longer due) and the caller would lose the first
//	               run's jobs until their lease expires
//	finish         at most once: a second run finds the lease gone and
//	               answers "lease lost" for a recorded outcome
//	pace           at most once: a second run takes the lane's slots twice
//	dlqRetry       at most once: a second run answers "conflict" (retried)
//	dlqStatus      at most once: it could undo an operator's later change
//	replay         at most once: a second run answers "conflict" (queued)
//	erase          at most once: a second run finds nothing and answers
//	               "not found" for an event it erased (a lost reply is a
//	               503: asked again, the operator gets 404, the event gone)
//	fanEnqueue     retried: as enqueue (it finds the record it stored, or
//	               the first delivery the record became)
//	expand, peek   retried: a second run finds no fan-out record left to
//	               expand (peek: and reads)
//	heads, counts, retried: read only
//	laneCounts
//	layout         retried: sets the partition count only if absent, and
//	               moves a store to layout 3 only from layout 1 or 2
//	claimCut       retried: a second run counts one more Cleanup at the
//	               same time (which, with a clock ahead of the enqueues',
//	               also ends the claims written between the two runs
//	               whose window ended before it)
//	expireClaim,   retried: a second run finds nothing left to remove
//	removeEvent,   (removeEntry: nor a chain to release, the entry being
//	removeEntry    gone)
//	migrateLanes   retried: guarded by its marker key
//	dropGone       retried: a second run finds the ids dropped
//
// statsScript (AddStats) is sent at most once as well: a batch without an
// ID would count twice. Scripts not listed in retryable are sent at most
// once.
var retryable = map[*redis.Script]bool{
	enqueueScript:      true,
	fanEnqueueScript:   true,
	expandScript:       true,
	peekScript:         true,
	headsScript:        true,
	countedScript:      true,
	countersScript:     true,
	laneCountsScript:   true,
	layoutScript:       true,
	expireClaimScript:  true,
	claimCutScript:     true,
	removeEventScript:  true,
	removeEntryScript:  true,
	migrateLanesScript: true,
	dropGoneScript:     true,
}

// onceCmd is a command go-redis never sends twice: not on another
// connection after a network error, and no pipeline holding one is
// replayed. Redirections (MOVED, ASK) and NOSCRIPT still work: the command
// did not run.
type onceCmd struct{ *redis.Cmd }

// NoRetry implements redis.Cmder.
func (onceCmd) NoRetry() bool { return true }

// Clone implements redis.Cmder (keeping NoRetry).
func (c onceCmd) Clone() redis.Cmder { return onceCmd{c.Cmd.Clone().(*redis.Cmd)} }

type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// scriptCmd builds EVALSHA sha numkeys keys... args..., as go-redis does.
func scriptCmd(ctx context.Context, sha string, keys []string, args []any) *redis.Cmd {
	cmdArgs := make([]any, 0, 3+len(keys)+len(args))
	cmdArgs = append(cmdArgs, "evalsha", sha, len(keys))
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	cmdArgs = append(cmdArgs, args...)
	cmd := redis.NewCmd(ctx, cmdArgs...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3) // the cluster slot is the first key's
	}
	return cmd
}

// evalSha queues (on a pipeline) or runs (on a client) EVALSHA of sc,
// at most once unless sc is retryable.
func evalSha(ctx context.Context, c processor, sc *redis.Script, keys []string, args []any) *redis.Cmd {
	if retryable[sc] {
		if p, ok := c.(redis.Scripter); ok {
			return sc.EvalSha(ctx, p, keys, args...)
		}
	}
	cmd := scriptCmd(ctx, sc.Hash(), keys, args)
	_ = c.Process(ctx, onceCmd{cmd})
	return cmd
}

// eval runs sc as Script.Run does (EVALSHA, loading the script when the
// server does not have it), at most once unless sc is retryable.
func (s *Store) eval(ctx context.Context, sc *redis.Script, keys []string, args ...any) (any, error) {
	if retryable[sc] {
		return sc.Run(ctx, s.c, keys, args...).Result()
	}
	cmd := evalSha(ctx, s.c, sc, keys, args)
	if noScript(cmd.Err()) { // it did not run: load it and send it once
		if err := sc.Load(ctx, s.c).Err(); err != nil {
			return nil, err
		}
		cmd = evalSha(ctx, s.c, sc, keys, args)
	}
	return cmd.Result()
}
