package redisstore

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hookline/hookline/storage"
)

// statsKey is the hash of one minute's counters, or the all-time one.
func (s *Store) statsKey(minute int64) string {
	if minute == 0 {
		return "{" + s.opts.Prefix + ":meta}:stats:all"
	}
	return "{" + s.opts.Prefix + ":meta}:stats:m:" + strconv.FormatInt(minute, 10)
}

// AddStats implements storage.Store.
func (s *Store) AddStats(ctx context.Context, at time.Time, deltas map[string]map[string]int64) error {
	minute := storage.StatsMinute(at)
	_, err := s.c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		for source, m := range deltas {
			for name, d := range m {
				field := storage.StatsField(source, name)
				hincrByOnce(ctx, pipe, s.statsKey(0), field, d) // a replayed MULTI would count twice
				hincrByOnce(ctx, pipe, s.statsKey(minute), field, d)
			}
		}
		pipe.Expire(ctx, s.statsKey(minute), storage.StatsRetention)
		return nil
	})
	return unavailable(err)
}

// Stats implements storage.Store.
func (s *Store) Stats(ctx context.Context, since time.Time) (map[string]map[string]int64, map[string]map[string]int64, error) {
	from, to := storage.StatsMinute(since), storage.StatsMinute(s.now())
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
			source, name, ok := storage.SplitStatsField(field)
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
