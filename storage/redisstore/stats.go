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

// statsBatchKey marks a storage.StatsBatch applied, for
// StatsBatchMemory.
func (s *Store) statsBatchKey(id string) string {
	return "{" + s.opts.Prefix + ":meta}:stats:batch:" + id
}

// AddStats implements storage.Store: the all-time, minute and hour hashes
// in one script (every key in the meta slot), HINCRBY each, after marking
// the batch's ID applied (a batch marked already is not applied again).
// Sent at most once: without an ID a second run would count twice.
func (s *Store) AddStats(ctx context.Context, b storage.StatsBatch) error {
	minute, hour := storage.StatsMinute(b.At), storage.StatsHour(b.At)
	marker, memory := s.statsBatchKey("-"), int64(0)
	if b.ID != "" {
		marker, memory = s.statsBatchKey(b.ID), int64(storage.StatsBatchMemory/time.Second)
	}
	args := []any{memory, int64(storage.StatsRetention / time.Second), int64(storage.StatsHourRetention / time.Second), 0, 0}
	for source, m := range b.Counters {
		for name, d := range m {
			args = append(args, storage.StatsField(source, name), d)
		}
	}
	args[3] = (len(args) - 5) / 2
	for source, m := range b.Window {
		for name, d := range m {
			args = append(args, storage.StatsField(source, name), d)
		}
	}
	args[4] = (len(args)-5)/2 - args[3].(int)
	for source, m := range b.Latest {
		for name, v := range m {
			args = append(args, storage.StatsField(source, name), v)
		}
	}
	if len(args) == 5 {
		return nil
	}
	_, err := s.eval(ctx, statsScript, []string{marker, s.statsKey(0), s.statsKey(minute), s.statsHourKey(hour)}, args...)
	return unavailable(err)
}

// statsScript adds a batch of counters.
// KEYS: batch marker, all-time hash, minute hash, hour hash.
// ARGV: marker lifetime in seconds (0: no marker), minute and hour hash
// lifetimes, the number n of all-time counters, the number w of window
// counters, then field, value pairs: the first n deltas go to all three
// hashes, the next w to the minute and hour ones, and the rest are latest
// values, set in the all-time hash when larger than its own.
// Returns 0 when the batch was applied already, else 1.
var statsScript = redis.NewScript(`
if ARGV[1] ~= '0' then
	if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', ARGV[1]) then
		return 0
	end
end
local n = tonumber(ARGV[4])
local w = tonumber(ARGV[5])
local i = 6
while i < #ARGV do
	if n <= 0 and w <= 0 then
		local cur = redis.call('HGET', KEYS[2], ARGV[i])
		if not cur or tonumber(cur) < tonumber(ARGV[i + 1]) then
			redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
		end
	else
		redis.call('HINCRBY', KEYS[3], ARGV[i], ARGV[i + 1])
		redis.call('HINCRBY', KEYS[4], ARGV[i], ARGV[i + 1])
		if n > 0 then
			redis.call('HINCRBY', KEYS[2], ARGV[i], ARGV[i + 1])
			n = n - 1
		else
			w = w - 1
		end
	end
	i = i + 2
end
redis.call('EXPIRE', KEYS[3], ARGV[2])
redis.call('EXPIRE', KEYS[4], ARGV[3])
return 1
`)

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
