package redisstore

import (
	"strings"

	"github.com/redis/go-redis/v9"
)

// Claims. An event's claim on (source, event id) is one key,
// {hookline:7}:claim:<claim key>, whose value is the event's internal id,
// the end of its dedupe window (Unix ms, the callers' clock) and the
// partition's count of Cleanups when it was written, NUL-separated. It has
// no TTL while its event is kept: after the window it still names the
// event, which Lookup and erasure by the provider's id find through it,
// until a later event with the same provider id takes it. The event's last
// record takes it with it (releaseClaim), or, when the window has not
// ended (an erasure, a retention shorter than the window), gives it a TTL
// to the window's end: a resend within it is still a duplicate.
//
// A claim is over once its end is before the clock of the script that
// reads it, or before the time of the partition's latest Cleanup if one
// ran since the claim was written: the claim cut, {hookline:7}:claimcut,
// a hash of the count of Cleanups (seq) and the latest one's time (ms).
// So a Cleanup at a time ends the claims that exist then and whose window
// ended before it, as it did when it deleted them, and nothing needs to
// expire them; a claim written after it is left to its own end, whatever
// that Cleanup's clock said. With the nodes' clocks in sync the cut
// changes nothing: an enqueue's own clock is past it. Where they are not,
// the latest Cleanup's time is the one that counts: after a node whose
// clock runs ahead, a Cleanup by one that does not gives back the claims
// the first ended early and no later event took (their windows have not
// ended by the enqueues' clocks).
//
// This is layout 2 (layout.go). Layout 1 wrote three keys per claim: the
// claim with the event's id and a TTL to the window's end, an ids key
// naming the event while it was kept, and the claim's end in the claimexp
// index, for Cleanup to end it by its own clock. The claims a store of
// layout 1 holds are read as they were written (an id without an end:
// held while the key lives), its ids keys are read after the claims, and
// Cleanup still sweeps its claimexp index, which only they are in.

// claimSep separates the fields of a claim's value (no internal id holds
// a NUL byte).
const claimSep = "\x00"

// claimedID is the id of the event a claim's value names: the value
// itself for a claim of layout 1.
func claimedID(v string) string {
	id, _, _ := strings.Cut(v, claimSep)
	return id
}

// luaClaimed defines claimed(v), cutOf(key) and over(ends, seq, cseq,
// cms, now): claimed reads a claim's value v (GET's reply: false when
// there is none): its event id, end ms and the count of Cleanups when it
// was written; a claim of layout 1 has an id alone, no claim nothing.
// cutOf reads a claim cut: its count of Cleanups and the latest one's
// time (0, 0: none ran). over says whether a claim of layout 2 is over at
// now (ms), with the cut (cseq, cms).
const luaClaimed = `
local function claimed(v)
	if not v then return nil, nil, nil end
	local a = string.find(v, '\0', 1, true)
	if not a then return v, nil, nil end
	local b = string.find(v, '\0', a + 1, true) or (#v + 1)
	return string.sub(v, 1, a - 1), tonumber(string.sub(v, a + 1, b - 1)), tonumber(string.sub(v, b + 1)) or 0
end
local function cutOf(key)
	local c = redis.call('HMGET', key, 'seq', 'ms')
	return tonumber(c[1] or '0'), tonumber(c[2] or '0')
end
local function over(ends, seq, cseq, cms, now)
	return ends <= now or (seq < cseq and ends < cms)
end
`

// claimCut is the key of p's claim cut.
func (p partition) claimCut() string { return p.key("claimcut") }

// claimCutScript records a Cleanup of a partition at now in its claim
// cut: one more in the count, and its time the latest.
//
//	KEYS: claim cut
//	ARGV: now ms
var claimCutScript = redis.NewScript(`
redis.call('HINCRBY', KEYS[1], 'seq', 1)
redis.call('HSET', KEYS[1], 'ms', ARGV[1])
return 1
`)

// luaClaim defines claim(), the claim of the enqueue scripts
// (enqueueScript, fanEnqueueScript), whose first two KEYS (the claim, the
// claim cut) and seven ARGV (event id, dedupe, claim expiry ms, now ms,
// claim key text, touch, source) are the same: with dedupe, it returns
// the duplicate's reply ({1, existing id, claim ms left}) when the claim
// holds, else it takes it and returns nil. A claim that is over is taken
// over by the new event: the earlier event, if still kept, is no longer
// found by the provider's id (the later one is), as it was not in layout
// 1 either. With touch, a duplicate rewrites the claim, so that a
// following WAIT also covers the original write.
const luaClaim = luaClaimed + `
local function claim()
	if ARGV[2] ~= '1' then return nil end
	local cseq, cms = cutOf(KEYS[2])
	local v = redis.call('GET', KEYS[1])
	if v then
		local id, ends, seq = claimed(v)
		if not ends then
			local left = redis.call('PTTL', KEYS[1])
			if ARGV[6] == '1' and left > 0 then redis.call('PEXPIRE', KEYS[1], left) end
			return {1, id, left}
		end
		local now = tonumber(ARGV[4])
		if not over(ends, seq, cseq, cms, now) then
			if ARGV[6] == '1' then redis.call('SET', KEYS[1], v, 'KEEPTTL') end
			return {1, id, ends - now}
		end
	end
	redis.call('SET', KEYS[1], ARGV[1] .. '\0' .. ARGV[3] .. '\0' .. cseq)
	return nil
end
`

// luaReleaseClaim defines releaseClaim(key, cut, id, now): once the last
// record of event id is gone, its claim under key (if the claim still
// names it) is deleted when it is over at now (ms) with the claim cut cut,
// or else kept with a TTL to its end. It returns that end (0: not kept),
// and whether the claim is event id's of layout 1, which it leaves to its
// TTL, as layout 1 did.
const luaReleaseClaim = luaClaimed + `
local function releaseClaim(key, cut, id, now)
	local cid, ends, seq = claimed(redis.call('GET', key))
	if cid ~= id then return 0, false end
	if not ends then return 0, true end
	local cseq, cms = cutOf(cut)
	if over(ends, seq, cseq, cms, tonumber(now)) then
		redis.call('DEL', key)
		return 0, false
	end
	redis.call('PEXPIREAT', key, ends)
	return ends, false
end
`
