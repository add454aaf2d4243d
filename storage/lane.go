package storage

// Lane names. Every lane name is decided here: a job's lane (LaneOf), a
// source's lanes as the gate lists them (LanesOf), the source a lane belongs
// to (SourceOfLane), the pace it shares (PaceOf), the lane whose gate
// entries it follows (GateLaneOf) and the lane a tenant's share belongs to
// (BaseLane).

import (
	"encoding/hex"
	"hash/fnv"
	"strconv"
	"strings"
)

// replayLaneSuffix marks a replay lane. Source and destination names are
// letters, digits, '.', '_' and '-', so no other lane ends with it.
const replayLaneSuffix = "~replay"

// destinationLaneSep separates a source from a destination in the lane of
// a non-default destination's deliveries (no source name holds it).
const destinationLaneSep = "/"

// tenantShareSep separates a live lane from the number of a tenant's
// share of it (no source or destination name holds it).
const tenantShareSep = "#"

// TenantShares is how many shares a live lane is split into by tenant:
// the deliveries of an event with a tenant wait in the share its tenant
// hashes to (TenantShare), and a lane's shares take turns at lease time
// (PickFair), so that one tenant's backlog holds back only the tenants of
// its share. A fixed number: the store keeps no state per tenant, however
// many there are.
const TenantShares = 16

// tenantApartSep separates a live lane from the key of the tenant whose
// deliveries wait apart from the lane's shares (TenantLane); it begins
// with tenantShareSep, so such a lane is a share of its lane too.
const tenantApartSep = tenantShareSep + "t"

// TenantKey names a tenant in a lane (TenantLane): 16 hex digits of its
// FNV-1a 64-bit hash, so that a lane name stays short whatever the
// tenant's.
func TenantKey(tenant string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(tenant))
	return hex.EncodeToString(h.Sum(nil)) // big-endian: as %016x of Sum64
}

// TenantLane is the lane of tenant's deliveries apart from lane's shares,
// lane#t<TenantKey>: where an event marked Apart waits. The gate holds a
// paused tenant's deliveries by skipping these lanes; otherwise such a
// lane takes its turn with the lane's shares (PickFair).
func TenantLane(lane, tenant string) string { return lane + tenantApartSep + TenantKey(tenant) }

// IsTenantLane reports whether lane is tenant's lane apart (TenantLane)
// of some lane.
func IsTenantLane(lane, tenant string) bool {
	return strings.HasSuffix(lane, tenantApartSep+TenantKey(tenant))
}

// TenantShare is the share of a lane tenant's deliveries wait in (FNV-1a
// of the tenant, modulo TenantShares): the same on every node and store.
func TenantShare(tenant string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(tenant))
	return int(h.Sum32() % TenantShares)
}

// LaneOf is the lane of a job's event: its source for the default
// destination (a replayed event's: its source's replay lane), as before
// destinations existed; a delivery to another destination waits in its own
// lane, source/destination (and source/destination~replay), so that each
// destination can be held back on its own. A live delivery of an event
// with a tenant waits in its tenant's share of that lane, lane#share
// (TenantShare), or, marked Apart, in its tenant's own lane (TenantLane);
// a replay, started by an operator, does not.
func LaneOf(ev *Event) string {
	lane := ev.Source
	if !IsDefaultDestination(ev.Destination) {
		lane += destinationLaneSep + ev.Destination
	}
	switch {
	case ev.Replay:
		lane += replayLaneSuffix
	case ev.Tenant != "" && ev.Apart:
		lane = TenantLane(lane, ev.Tenant)
	case ev.Tenant != "":
		lane += tenantShareSep + strconv.Itoa(TenantShare(ev.Tenant))
	}
	return lane
}

// ShareQuota is how many due jobs a lease reads first from each of the
// shares of a lane (shares: how many it has, the lane itself counted)
// when it wants n: an even part of n and one more, so that the shares
// together give n while each can take its turn, without reading n from
// each. A lease whose shares hold fewer than n that way reads on in those
// it cut short. The Redis peek script holds the same rule
// (TestShareQuotaLuaAgreesWithGo).
func ShareQuota(shares, n int) int {
	if shares <= 1 {
		return n
	}
	return min(n, (n+shares-1)/shares+1)
}

// BaseLane is the lane a tenant's share belongs to (a lane that is no
// share: itself). The gate, the pace, the counts and the ordered chains
// know base lanes only: a lane's shares are paused, paced, capped and
// ordered as one.
func BaseLane(lane string) string {
	base, _, _ := strings.Cut(lane, tenantShareSep)
	return base
}

// LanesOf lists the lanes of source's default deliveries (its own, then its
// replay lane): the gate treats them alike (skip, cap, pace).
func LanesOf(source string) []string { return DestinationLanes(source, "") }

// DestinationLanes lists the lanes of source's deliveries to destination
// (its live lane, then its replay lane), the default destination's being
// LanesOf(source). The gate lists them for each configured destination, so
// that a destination is held back and paced on its own; the lanes of a
// destination it does not list follow their source's (GateLaneOf).
func DestinationLanes(source, destination string) []string {
	live := LaneOf(&Event{Source: source, Destination: destination})
	return []string{live, live + replayLaneSuffix}
}

// SourceOfLane is the source whose jobs lane holds.
func SourceOfLane(lane string) string {
	src, _, _ := strings.Cut(strings.TrimSuffix(BaseLane(lane), replayLaneSuffix), destinationLaneSep)
	return src
}

// GateLaneOf is the lane whose gate entries (skip, cap, pace) hold for lane
// when the gate has none of its own: a destination's lane follows its
// source's lane of the same kind (live or replay). The gate lists the lanes
// of every configured destination; this holds for the deliveries of a
// destination removed from the config, held and paced with their source.
func GateLaneOf(lane string) string {
	if strings.HasSuffix(BaseLane(lane), replayLaneSuffix) {
		return SourceOfLane(lane) + replayLaneSuffix
	}
	return SourceOfLane(lane)
}

// PaceOf names the pace a lane takes its slots from (Gate.Pace holds
// each lane's rate): a destination's lanes share one, so that its replays
// and its live traffic together stay within its rate_limit; each
// destination of a source has its own (its own upstream). The backends key
// their pacing state by it.
func PaceOf(lane string) string { return strings.TrimSuffix(BaseLane(lane), replayLaneSuffix) }

// ByBaseLane sums counts by lane (QueueByLane) into counts by base lane
// (BaseLane: a lane's tenant shares as one), as operators see them.
func ByBaseLane(byLane map[string]Counts) map[string]Counts { return sumCountsBy(byLane, BaseLane) }

// CountsBySource sums counts by lane (QueueByLane) into counts by source.
func CountsBySource(byLane map[string]Counts) map[string]Counts {
	return sumCountsBy(byLane, SourceOfLane)
}

// sumCountsBy sums the queued and in-flight counts by lane into counts by
// key(lane).
func sumCountsBy(byLane map[string]Counts, key func(lane string) string) map[string]Counts {
	out := make(map[string]Counts, len(byLane))
	for lane, c := range byLane {
		k := key(lane)
		n := out[k]
		n.Queued += c.Queued
		n.InFlight += c.InFlight
		out[k] = n
	}
	return out
}

// CountsOfDestination sums the counts (QueueByLane) of the lanes of
// source's deliveries to destination; destination "" sums every lane of
// source.
func CountsOfDestination(byLane map[string]Counts, source, destination string) Counts {
	var n Counts
	for lane, c := range byLane {
		if SourceOfLane(lane) != source {
			continue
		}
		if destination != "" && PaceOf(lane) != PaceOf(DestinationLanes(source, destination)[0]) {
			continue
		}
		n.Queued += c.Queued
		n.InFlight += c.InFlight
	}
	return n
}

// SumCounts is Counts from QueueByLane's and DLQCounts' answers: every
// lane's queued and in-flight jobs, and the DLQ entries still open
// (pending, investigating).
func SumCounts(byLane map[string]Counts, dlq map[string]map[DLQStatus]int) Counts {
	var c Counts
	for _, n := range byLane {
		c.Queued += n.Queued
		c.InFlight += n.InFlight
	}
	for _, m := range dlq {
		for st, n := range m {
			if st.Open() {
				c.Dead += n
			}
		}
	}
	return c
}
