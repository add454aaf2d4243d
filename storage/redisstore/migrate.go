package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"
)

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
	if err := s.buildCounters(ctx); err != nil {
		return err
	}
	s.migrated.Store(true)
	return nil
}

// migrateLanesScript builds the lane queues of one partition from its due
// index (stores written before lanes existed: every job in one zset), then
// drops that index; it runs once a partition.
//
//	KEYS: legacy due index, lanes, migrated marker
//	ARGV: event key prefix, lane queue key prefix
var migrateLanesScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
local r = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
for i = 1, #r, 2 do
	local id = r[i]
	local src = redis.call('HGET', ARGV[1] .. id, 'src')
	if not src or src == '' then
		local ev = redis.call('HGET', ARGV[1] .. id, 'ev')
		local ok, dec = pcall(cjson.decode, ev or '')
		src = (ok and type(dec) == 'table' and dec.source) or ''
	end
	redis.call('ZADD', ARGV[2] .. src, r[i + 1], id)
	redis.call('SADD', KEYS[2], src)
end
redis.call('DEL', KEYS[1])
redis.call('SET', KEYS[3], '1')
return #r / 2
`)
