package redisstore

// luaSkipped is the Lua function skipped(skip, lane) of the scripts that
// walk a partition's lanes (peek, heads): storage.Gate.Skipped's rule on
// the skip entries the script was given (skipArgs: lane -> '1' or '0'). A
// lane without an entry of its own follows storage.GateLaneOf(lane): a
// destination's lane (source/destination, source/destination~replay) its
// source's lane of the same kind. Source names hold neither '/' nor '~'.
// A tenant's share of a lane (lane#k) is its base lane's (storage.BaseLane),
// unless it is a tenant's lane apart skipped by name (storage.TenantLane).
// TestGateSkipLuaAgreesWithGo keeps the two in step.
const luaSkipped = `
local function skipped(skip, lane)
	if skip[lane] == '1' then return true end
	lane = string.match(lane, '^[^#]*')
	local v = skip[lane]
	if v == nil then
		local own = string.match(lane, '^[^/~]*')
		if string.sub(lane, -7) == '~replay' then own = own .. '~replay' end
		v = skip[own]
	end
	return v == '1'
end
`

// luaShareQuota is the Lua function shareQuota(shares, n) of the peek
// script: storage.ShareQuota's rule. TestShareQuotaLuaAgreesWithGo keeps
// the two in step.
const luaShareQuota = `
local function shareQuota(shares, n)
	if shares <= 1 then return n end
	return math.min(n, math.floor((n + shares - 1) / shares) + 1)
end
`
