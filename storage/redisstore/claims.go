package redisstore

import (
	"strings"

	"github.com/redis/go-redis/v9"
)

// Claims. An event's claim on (source, event id) is one key,
// {hookline:7}:claim:<claim key>, whose value is the event's internal id,
// a NUL byte, and the end of its dedupe window (Unix ms, the callers'
// clock). It has no TTL while its event is kept: after the window it
// still names the event, which Lookup and erasure by the provider's id
// find through it, until a later event with the same provider id takes
// it. The event's last record takes it with it (releaseClaim), or, when
// the window has not ended (an erasure, a retention shorter than the
// window), gives it a TTL to the window's end: a resend within it is still
// a duplicate.
//
// Whether a claim holds is decided by comparing its end with the caller's
// clock, in the script that reads it, or with the partition's claim cut
// if that is later: the latest time a Cleanup of the partition was run
// for ({hookline:7}:claimcut, Unix ms). A Cleanup at a time ends every
// claim whose window ended before it (as it did when it deleted them),
// and nothing else needs to expire them. With the nodes' clocks in sync
// the cut changes nothing: an enqueue's own clock is past it. A node
// whose clock runs ahead ends early the claims with a window shorter than
// its lead (a duplicate may then be stored twice, never two events
// merged), as a Cleanup deleting them did. This is layout 2 (layout.go). Layout 1 wrote three keys per claim: the claim
// with the event's id and a TTL to the window's end, an ids key naming the
// event while it was kept, and the claim's end in the claimexp index, for
// Cleanup to end it by its own clock. The claims a store of layout 1
// holds are read as they were written (an id without an end: held while
// the key lives), its ids keys are read where no claim is, and Cleanup
// still sweeps its claimexp index, which only they are in.

// claimSep separates a claim's event id from its end (no internal id
// holds a NUL byte).
const claimSep = "\x00"

// claimedID is the id of the event a claim's value names: the value
// itself for a claim of layout 1.
func claimedID(v string) string {
	id, _, _ := strings.Cut(v, claimSep)
	return id
}

// luaClaimed defines claimed(v): the event id and end ms a claim's value
// v (GET's reply: false when there is none) names; the end is nil for a
// claim of layout 1, and both for no claim.
const luaClaimed = `
local function claimed(v)
	if not v then return nil, nil end
	local at = string.find(v, '\0', 1, true)
	if not at then return v, nil end
	return string.sub(v, 1, at - 1), tonumber(string.sub(v, at + 1))
end
`

// claimCut is the key of p's claim cut.
func (p partition) claimCut() string { return p.key("claimcut") }

// claimCutScript moves a partition's claim cut to a Cleanup's time, unless
// it is past it already.
//
//	KEYS: claim cut
//	ARGV: now ms
var claimCutScript = redis.NewScript(`
local cut = tonumber(redis.call('GET', KEYS[1]) or '0')
if tonumber(ARGV[1]) > cut then redis.call('SET', KEYS[1], ARGV[1]) end
return 1
`)

// luaClaim defines claim(), the claim of the enqueue scripts
// (enqueueScript, fanEnqueueScript), whose first two KEYS (the claim, the
// claim cut) and seven ARGV (event id, dedupe, claim expiry ms, now ms, claim key text,
// touch, source) are the same: with dedupe, it returns the duplicate's
// reply ({1, existing id, claim ms left}) when the claim holds, else it
// takes it and returns nil. A claim whose window ended before now is
// taken over by the new event: the earlier event, if still kept, is no
// longer found by the provider's id (the later one is), as it was not in
// layout 1 either. With touch, a duplicate rewrites the claim, so that a
// following WAIT also covers the original write.
const luaClaim = luaClaimed + `
local function claim()
	if ARGV[2] ~= '1' then return nil end
	local v = redis.call('GET', KEYS[1])
	if v then
		local id, ends = claimed(v)
		if not ends then
			local left = redis.call('PTTL', KEYS[1])
			if ARGV[6] == '1' and left > 0 then redis.call('PEXPIRE', KEYS[1], left) end
			return {1, id, left}
		end
		local left = ends - math.max(tonumber(ARGV[4]), tonumber(redis.call('GET', KEYS[2]) or '0'))
		if left > 0 then
			if ARGV[6] == '1' then redis.call('SET', KEYS[1], v, 'KEEPTTL') end
			return {1, id, left}
		end
	end
	redis.call('SET', KEYS[1], ARGV[1] .. '\0' .. ARGV[3])
	return nil
end
`

// luaReleaseClaim defines releaseClaim(key, id, now): once the last record
// of event id is gone, its claim under key (if the claim still names it)
// is deleted, or kept with a TTL to its end when its window has not ended
// by now (ms). It returns that end (0: not kept). A claim of layout 1 is
// left to its TTL, as layout 1 did, and returns 0.
const luaReleaseClaim = luaClaimed + `
local function releaseClaim(key, id, now)
	local cid, ends = claimed(redis.call('GET', key))
	if cid ~= id or not ends then return 0 end
	if ends > tonumber(now) then
		redis.call('PEXPIREAT', key, ends)
		return ends
	end
	redis.call('DEL', key)
	return 0
end
`
