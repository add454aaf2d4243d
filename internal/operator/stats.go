package operator

import (
	"net/http"
	"strings"
	"time"
)

// statsWindow is the "last hour" of the stats.
const statsWindow = time.Hour

// stats answers GET /webhooks/stats (StatsAnswer): the queue's current
// sizes and, by source, what was received, rejected, delivered and
// dead-lettered over the last hour and all-time, with the derived rates.
// Counts are those of every node sharing the store.
func (h *Handler) stats(w http.ResponseWriter, r *http.Request) error {
	app, err := h.ready()
	if err != nil {
		return err
	}
	s, err := app.Stats(r.Context(), time.Now().Add(-statsWindow))
	if err != nil {
		return err
	}
	res := StatsAnswer{PausedSources: app.PausedSources(), Queue: s.Queue, Sources: make(map[string]SourceStats, len(s.Sources))}
	lastHour, allTime := map[string]int64{}, map[string]int64{}
	for name, src := range s.Sources {
		types := map[string]TypeStats{}
		recent := splitTypes(src.Recent, types, func(t *TypeStats) *TypeCounts { return &t.LastHour })
		all := splitTypes(src.AllTime, types, func(t *TypeStats) *TypeCounts { return &t.AllTime })
		st := SourceStats{Queue: src.Queue, Windows: Windows{LastHour: summarize(recent), AllTime: summarize(all)}}
		if len(types) > 0 {
			st.Types = types
		}
		res.Sources[name] = st
		src.Recent, src.AllTime = recent, all
		for k, v := range src.Recent {
			lastHour[k] += v
		}
		for k, v := range src.AllTime {
			allTime[k] += v
		}
	}
	res.Total = Windows{LastHour: summarize(lastHour), AllTime: summarize(allTime)}
	return answer(w, res)
}

// typeCounterPrefix starts the stats counters kept by event type:
// "type:<outcome>:<type>", outcome accepted, delivered or dead.
const typeCounterPrefix = "type:"

// TypeCounter is the name of the stats counter of outcome for events of
// type typ.
func TypeCounter(outcome, typ string) string { return typeCounterPrefix + outcome + ":" + typ }

// splitTypes returns the counters of c that are not by type, and adds
// those that are to types, in the window window picks.
func splitTypes(c map[string]int64, types map[string]TypeStats, window func(*TypeStats) *TypeCounts) map[string]int64 {
	if c == nil {
		return nil
	}
	plain := make(map[string]int64, len(c))
	for name, n := range c {
		rest, ok := strings.CutPrefix(name, typeCounterPrefix)
		if !ok {
			plain[name] = n
			continue
		}
		outcome, typ, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		ts := types[typ]
		tc := window(&ts)
		switch outcome {
		case "accepted":
			tc.Received += n
		case "delivered":
			tc.Delivered += n
		case "dead":
			tc.Dead += n
		}
		types[typ] = ts
	}
	return plain
}

// summarize derives the rates of raw counters (nil: none counted).
func summarize(c map[string]int64) WindowStats {
	if c == nil {
		c = map[string]int64{}
	}
	s := WindowStats{Counters: c, Received: c["accepted"], Duplicates: c["duplicate"],
		Delivered: c["delivered"], Dead: c["dead"]}
	for name, n := range c {
		switch name {
		case "accepted", "duplicate", "handshake", "delivered", "dead", "retry", "attempts":
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
