package operator

import (
	"net/http"
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
		res.Sources[name] = SourceStats{Queue: src.Queue, Windows: Windows{LastHour: summarize(src.Recent), AllTime: summarize(src.AllTime)}}
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
