package webhooks

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookline/hookline/internal/operator"
)

// Which of a source's secrets verified its requests, by position (1 for
// the first configured), never by value: counted in the metric
// signature_matches_total{source,secret} and in the stats (operator's
// SecretMatchCounter and SecretLastMatched), so that an operator rotating
// a secret sees the old one stop matching before removing it.

// secretSlots is how many positions a SecretMatches keeps ready: a source
// with more secrets still counts the rest, naming them on each match.
const secretSlots = 8

// secretMatchSlot is one position's metric child and stats names.
type secretMatchSlot struct {
	counter       prometheus.Counter
	matched, last string
}

// SecretMatches counts the matches of one source's secrets. Its slots are
// filled on a position's first match, so counting one allocates nothing
// after that, and no series exists for a secret that never matched.
type SecretMatches struct {
	app    *App
	source string
	slots  [secretSlots]atomic.Pointer[secretMatchSlot]
}

// SecretMatches returns the counter of source's secret matches.
func (a *App) SecretMatches(source string) *SecretMatches {
	return &SecretMatches{app: a, source: source}
}

// newSecretMatchSlot names position key (0-based) of source.
func newSecretMatchSlot(source string, key int) *secretMatchSlot {
	pos := strconv.Itoa(key + 1)
	return &secretMatchSlot{
		counter: metrics.secretMatches.WithLabelValues(source, pos),
		matched: operator.SecretMatchCounter(key + 1),
		last:    operator.SecretLastMatched(key + 1),
	}
}

// Observe counts a request verified at now by the secret at position key
// (0-based, verifiers.KeyVerifier's).
func (m *SecretMatches) Observe(key int, now time.Time) {
	if m == nil || key < 0 {
		return
	}
	var s *secretMatchSlot
	if key < secretSlots {
		if s = m.slots[key].Load(); s == nil {
			s = newSecretMatchSlot(m.source, key)
			m.slots[key].Store(s)
		}
	} else {
		s = newSecretMatchSlot(m.source, key)
	}
	s.counter.Inc()
	if b := m.app.stats; b != nil {
		b.addLatest(m.source, s.matched, 1, s.last, now.Unix())
	}
}
