package operator

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// statsWindow is the "last hour" of the stats.
const statsWindow = time.Hour

// stats answers GET /webhooks/stats (StatsAnswer): the queue's current
// sizes and, by source, what was received, rejected, delivered and
// dead-lettered over the last hour and all-time, with the derived rates.
// Counts are those of every node sharing the store. With from, to, source
// or type it answers the range instead (rangeStats).
func (h *Handler) stats(w http.ResponseWriter, r *http.Request) error {
	if rangeQuery(r) {
		return h.rangeStats(w, r)
	}
	app, err := h.ready()
	if err != nil {
		return err
	}
	s, err := app.Stats(r.Context(), time.Now().Add(-statsWindow))
	if err != nil {
		return err
	}
	res := StatsAnswer{Pauses: []PauseInfo{}, Queue: s.Queue, Sources: make(map[string]SourceStats, len(s.Sources)),
		Encryption: app.Encryption(), Store: StoreState{Available: !s.Unavailable}, Spool: s.Spool}
	if len(s.SignatureFailures) > 0 {
		res.SignatureFailures = s.SignatureFailures
	}
	for _, p := range app.Pauses() {
		if p.WholeSource() {
			res.PausedSources = append(res.PausedSources, p.Source)
		}
		res.Pauses = append(res.Pauses, pauseInfo(p, s.Lanes))
	}
	lastHour, allTime := map[string]int64{}, map[string]int64{}
	for name, src := range s.Sources {
		var b breakdown
		recent := b.split(src.Recent, false)
		all := b.split(src.AllTime, true)
		st := SourceStats{Queue: src.Queue, Windows: Windows{LastHour: summarize(recent), AllTime: summarize(all)},
			Types: b.types, Destinations: b.destinations, Secrets: b.secretList(src.Secrets), Tenants: b.tenantList()}
		res.Sources[name] = st
		for k, v := range recent {
			lastHour[k] += v
		}
		for k, v := range all {
			allTime[k] += v
		}
	}
	res.Total = Windows{LastHour: summarize(lastHour), AllTime: summarize(allTime)}
	return answer(w, res)
}

// The stats counters kept by event type, by destination and by secret,
// beside a source's plain counters: "type:<outcome>:<type>" (outcome
// accepted, delivered or dead), "destination:<outcome>:<name>" (outcome
// delivered or dead), "secret:matched:<position>" and the latest value
// "secret:last:<position>" (Unix seconds).
const (
	typeCounterPrefix        = "type:"
	destinationCounterPrefix = "destination:"
	secretCounterPrefix      = "secret:"
)

// SecretMatchCounter is the name of the stats counter of the requests
// verified by a source's secret at position pos (1 for the first).
func SecretMatchCounter(pos int) string { return secretCounterPrefix + "matched:" + strconv.Itoa(pos) }

// SecretLastMatched is the name of the latest value (storage.StatsBatch's
// Latest) of when a source's secret at position pos last verified a
// request, in Unix seconds.
func SecretLastMatched(pos int) string { return secretCounterPrefix + "last:" + strconv.Itoa(pos) }

// TypeCounter is the name of the stats counter of outcome for events of
// type typ.
func TypeCounter(outcome, typ string) string { return typeCounterPrefix + outcome + ":" + typ }

// DestinationCounter is the name of the stats counter of outcome for the
// deliveries to destination dest.
func DestinationCounter(outcome, dest string) string {
	return destinationCounterPrefix + outcome + ":" + dest
}

// BreakdownOf says which breakdown the counter name belongs to: "type"
// and the event type for a counter by type, "destination" and its name
// for one by destination; ok false for any other counter.
func BreakdownOf(name string) (kind, value string, ok bool) {
	for _, b := range []struct{ prefix, kind string }{{typeCounterPrefix, "type"}, {destinationCounterPrefix, "destination"}} {
		if rest, found := strings.CutPrefix(name, b.prefix); found {
			if _, v, found := strings.Cut(rest, ":"); found {
				return b.kind, v, true
			}
		}
	}
	return "", "", false
}

// breakdown gathers a source's counters by event type, by destination
// and by secret, over both windows (nil maps until one is counted).
type breakdown struct {
	types        map[string]TypeStats
	destinations map[string]DestinationStats
	secrets      map[int]SecretStats
	tenants      map[string]TenantStats // the last hour's
}

// split returns the plain counters of c (those neither by type nor by
// destination, nil for nil) and adds the others to b, in the all-time
// window when allTime, else in the last hour; the time series' counters
// (seriesCounter) are left out. A counter by type or destination never
// counts as plain: it would count as rejected, and twice in the totals.
func (b *breakdown) split(c map[string]int64, allTime bool) map[string]int64 {
	if c == nil {
		return nil
	}
	plain := make(map[string]int64, len(c))
	for name, n := range c {
		if rest, ok := strings.CutPrefix(name, typeCounterPrefix); ok {
			b.addType(rest, n, allTime)
		} else if rest, ok := strings.CutPrefix(name, destinationCounterPrefix); ok {
			b.addDestination(rest, n, allTime)
		} else if rest, ok := strings.CutPrefix(name, secretCounterPrefix); ok {
			b.addSecret(rest, n, allTime)
		} else if rest, ok := strings.CutPrefix(name, tenantCounterPrefix); ok {
			if !allTime { // counted in the windows only
				b.addTenant(rest, n)
			}
		} else if SeriesCounter(name) {
			continue // the time series' (seriescounters.go)
		} else {
			plain[name] = n
		}
	}
	return plain
}

// addType adds n to the type counter named "<outcome>:<type>".
func (b *breakdown) addType(counter string, n int64, allTime bool) {
	outcome, typ, ok := strings.Cut(counter, ":")
	if !ok || outcome != "accepted" && outcome != "delivered" && outcome != "dead" {
		return
	}
	if b.types == nil {
		b.types = map[string]TypeStats{}
	}
	ts := b.types[typ]
	tc := &ts.LastHour
	if allTime {
		tc = &ts.AllTime
	}
	tc.add(outcome, n)
	b.types[typ] = ts
}

// addDestination adds n to the destination counter named
// "<outcome>:<destination>".
func (b *breakdown) addDestination(counter string, n int64, allTime bool) {
	outcome, dest, ok := strings.Cut(counter, ":")
	if !ok || outcome != "delivered" && outcome != "dead" {
		return
	}
	if b.destinations == nil {
		b.destinations = map[string]DestinationStats{}
	}
	ds := b.destinations[dest]
	dc := &ds.LastHour
	if allTime {
		dc = &ds.AllTime
	}
	if outcome == "delivered" {
		dc.Delivered += n
	} else {
		dc.Dead += n
	}
	b.destinations[dest] = ds
}

// maxListedSecrets bounds the positions a source's list shows, whatever
// its counters (read from the store) say.
const maxListedSecrets = 64

// addSecret adds the secret counter named "matched:<position>" (n
// requests) or "last:<position>" (n the time, all-time only).
func (b *breakdown) addSecret(counter string, n int64, allTime bool) {
	kind, p, ok := strings.Cut(counter, ":")
	pos, err := strconv.Atoi(p)
	if !ok || err != nil || pos < 1 || kind != "matched" && kind != "last" {
		return
	}
	if b.secrets == nil {
		b.secrets = map[int]SecretStats{}
	}
	s := b.secrets[pos]
	s.Position = pos
	switch {
	case kind == "last" && allTime:
		s.LastMatched = time.Unix(n, 0).UTC()
	case kind == "matched" && allTime:
		s.MatchesAllTime += n
	case kind == "matched":
		s.MatchesLastHour += n
	}
	b.secrets[pos] = s
}

// secretList is the source's secrets by position: each of the inEffect
// secrets its scheme has configured on this node, matched or not, and no
// other (a position past them counted a secret since removed); when the
// scheme does not tell (inEffect 0: a source no longer configured), every
// position up to the last counted, at most maxListedSecrets. Nil when
// there is none.
func (b *breakdown) secretList(inEffect int) []SecretStats {
	n := inEffect
	if n == 0 {
		for pos := range b.secrets {
			n = max(n, pos)
		}
	}
	n = min(n, maxListedSecrets)
	var out []SecretStats
	for pos := 1; pos <= n; pos++ {
		s := b.secrets[pos]
		s.Position = pos
		out = append(out, s)
	}
	return out
}

// summarize derives the rates of raw counters (nil: none counted).
func summarize(c map[string]int64) WindowStats {
	if c == nil {
		c = map[string]int64{}
	}
	s := WindowStats{Counters: c, Received: c["accepted"], Duplicates: c["duplicate"], Ignored: c["ignored"],
		Delivered: c["delivered"], Dead: c["dead"]}
	for name, n := range c {
		switch name {
		case "accepted", "duplicate", "ignored", "handshake", "delivered", "dead", "retry", "attempts":
		default:
			s.Rejected += n // error codes, in lower case
		}
	}
	ratio := func(a, b int64) *float64 {
		if b == 0 {
			return nil
		}
		r := float64(a) / float64(b)
		return &r
	}
	s.SuccessRate = ratio(s.Delivered, s.Delivered+s.Dead)
	s.DLQRate = ratio(s.Dead, s.Received)
	s.AvgAttempts = ratio(c["attempts"], s.Delivered+s.Dead)
	return s
}
