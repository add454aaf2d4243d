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

// statsHourKey is the hash of one hour's counters.
func (s *Store) statsHourKey(hour int64) string {
	return "{" + s.opts.Prefix + ":meta}:stats:h:" + strconv.FormatInt(hour, 10)
}

// statsBucketKey is the hash of bucket i at resolution res.
func (s *Store) statsBucketKey(res storage.StatsResolution, i int64) string {
	if res == storage.StatsByHour {
		return s.statsHourKey(i)
	}
	return s.statsKey(i)
}

// AddStats implements storage.Store: the all-time, minute and hour hashes
// in one MULTI/EXEC (every key in the meta slot), HINCRBY each.
func (s *Store) AddStats(ctx context.Context, at time.Time, deltas map[string]map[string]int64) error {
	minute, hour := storage.StatsMinute(at), storage.StatsHour(at)
	_, err := s.c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		for source, m := range deltas {
			for name, d := range m {
				field := storage.StatsField(source, name)
				hincrByOnce(ctx, pipe, s.statsKey(0), field, d) // a replayed MULTI would count twice
				hincrByOnce(ctx, pipe, s.statsKey(minute), field, d)
				hincrByOnce(ctx, pipe, s.statsHourKey(hour), field, d)
			}
		}
		pipe.Expire(ctx, s.statsKey(minute), storage.StatsRetention)
		pipe.Expire(ctx, s.statsHourKey(hour), storage.StatsHourRetention)
		return nil
	})
	return unavailable(err)
}

// SetStatsGauges implements storage.Store (HSET: setting twice is
// harmless, so a retried MULTI is too).
func (s *Store) SetStatsGauges(ctx context.Context, at time.Time, gauges map[string]map[string]int64) error {
	minute, hour := s.statsKey(storage.StatsMinute(at)), s.statsHourKey(storage.StatsHour(at))
	var fields []any
	for source, m := range gauges {
		for name, v := range m {
			fields = append(fields, storage.StatsField(source, name), v)
		}
	}
	if len(fields) == 0 {
		return nil
	}
	_, err := s.c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.HSet(ctx, minute, fields...)
		pipe.HSet(ctx, hour, fields...)
		pipe.Expire(ctx, minute, storage.StatsRetention)
		pipe.Expire(ctx, hour, storage.StatsHourRetention)
		return nil
	})
	return unavailable(err)
}

// addStatsHash adds a stats hash's counters to out, by source and name.
func addStatsHash(out map[string]map[string]int64, h map[string]string) {
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
	recent, all := map[string]map[string]int64{}, map[string]map[string]int64{}
	addStatsHash(all, allCmd.Val())
	for _, c := range cmds {
		addStatsHash(recent, c.Val())
	}
	return recent, all, nil
}

// StatsBuckets implements storage.Store: one pipelined HGETALL per bucket
// of the range (at most 2,881 minutes or 841 hours: StatsBucketRange).
func (s *Store) StatsBuckets(ctx context.Context, res storage.StatsResolution, from, to time.Time) ([]storage.StatsBucket, error) {
	first, last, ok := storage.StatsBucketRange(res, from, to)
	if !ok {
		return nil, nil
	}
	cmds := make([]*redis.MapStringStringCmd, 0, last-first+1)
	_, err := s.c.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for i := first; i <= last; i++ {
			cmds = append(cmds, pipe.HGetAll(ctx, s.statsBucketKey(res, i)))
		}
		return nil
	})
	if err != nil {
		return nil, unavailable(err)
	}
	var out []storage.StatsBucket
	for j, c := range cmds {
		if len(c.Val()) == 0 {
			continue
		}
		b := storage.StatsBucket{Start: res.Start(first + int64(j)), Counters: map[string]map[string]int64{}}
		addStatsHash(b.Counters, c.Val())
		out = append(out, b)
	}
	return out, nil
}
