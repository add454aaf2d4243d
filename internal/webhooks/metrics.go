package webhooks

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookline/hookline/storage"
)

// Metrics are package-level so that counters survive config reloads; each
// config's registry gets them registered (Caddy gives every config a fresh
// registry). The names are the documented ones (docs/reference.md, "Metrics"): dashboards and
// alerting rules rely on them.
var metrics = struct {
	received          *prometheus.CounterVec
	deliveries        *prometheus.CounterVec
	deliveryDuration  *prometheus.HistogramVec
	durationByResult  *prometheus.HistogramVec
	signatureFailures *prometheus.CounterVec
	secretMatches     *prometheus.CounterVec
}{
	received: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "caddy", Subsystem: "webhooks", Name: "received_total",
		Help: "Webhook requests received, by source and outcome (accepted, duplicate, or the error code in lower case).",
	}, []string{"source", "outcome"}),
	deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "caddy", Subsystem: "webhooks", Name: "deliveries_total",
		Help: "Delivery attempts to the upstream, by source and result (delivered, retry, dead).",
	}, []string{"source", "result"}),
	deliveryDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "caddy", Subsystem: "webhooks", Name: "delivery_duration_seconds",
		Help:    "Duration of delivery attempts to the upstream.",
		Buckets: prometheus.DefBuckets,
	}, []string{"source"}),
	// a name of its own: Prometheus allows one label set per name, and
	// delivery_duration_seconds{source} keeps its users' queries working
	durationByResult: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "caddy", Subsystem: "webhooks", Name: "delivery_duration_by_result_seconds",
		Help:    "Duration of delivery attempts to the upstream, by source and result (delivered, retry, dead).",
		Buckets: prometheus.DefBuckets,
	}, []string{"source", "result"}),
	signatureFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "caddy", Subsystem: "webhooks", Name: "signature_failures_total",
		Help: "Requests rejected by signature verification, by source and reason (missing, malformed, timestamp, mismatch, body, other).",
	}, []string{"source", "reason"}),
	secretMatches: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "caddy", Subsystem: "webhooks", Name: "signature_matches_total",
		Help: "Requests whose signature verified, by source and the position of the secret that matched (1 for the first configured), so that a rotated-out secret is seen to stop matching.",
	}, []string{"source", "secret"}),
}

// observeReceived counts one ingress answer (App.Observe).
func observeReceived(source, outcome string) {
	metrics.received.WithLabelValues(source, outcome).Inc()
}

// observeSignatureFailure counts one failed verification
// (App.ObserveSignatureFailure).
func observeSignatureFailure(source, reason string) {
	metrics.signatureFailures.WithLabelValues(source, reason).Inc()
}

func observeDelivery(source, result string, d time.Duration) {
	metrics.deliveries.WithLabelValues(source, result).Inc()
	metrics.deliveryDuration.WithLabelValues(source).Observe(d.Seconds())
	metrics.durationByResult.WithLabelValues(source, result).Observe(d.Seconds())
}

// registerMetrics adds the package collectors and this app's queue-depth
// collector to the config's registry.
func (a *App) registerMetrics(reg *prometheus.Registry) error {
	if reg == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{metrics.received, metrics.deliveries, metrics.deliveryDuration, metrics.durationByResult, metrics.signatureFailures, metrics.secretMatches} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return err
			}
		}
	}
	return reg.Register(&queueCollector{app: a})
}

// queueCollector reads the queue depth and the DLQ size from the store at
// scrape time: both read the store's counters, not its jobs and entries.
type queueCollector struct {
	app *App
}

var dlqEntriesDesc = prometheus.NewDesc("caddy_webhooks_dlq_entries",
	"Dead letter queue entries, by source and status.", []string{"source", "status"}, nil)

var queueDepthDesc = prometheus.NewDesc("caddy_webhooks_queue_depth",
	"Events in the delivery queue, by state (queued, in_flight) and open DLQ entries (dead).", []string{"state"}, nil)

var oldestQueuedDesc = prometheus.NewDesc("caddy_webhooks_oldest_queued_age_seconds",
	"How long each source's longest-waiting delivery has been due and not delivered (0: none waits); read from the lanes' heads, one store read per lane.",
	[]string{"source"}, nil)

var storeUpDesc = prometheus.NewDesc("caddy_webhooks_store_up",
	"Whether this node reached the webhook store at scrape time (1) or not (0).", nil, nil)

var spoolEventsDesc = prometheus.NewDesc("caddy_webhooks_spool_events",
	"Events this node accepted while its store was unreachable and holds in its spool, not yet moved into the store (absent without a spool).", nil, nil)

var breakerOpenDesc = prometheus.NewDesc("caddy_webhooks_breaker_open",
	"Whether this node's circuit breaker of a destination (scheme://host#<hash of the path>) holds deliveries: 1 open or half-open, 0 closed.",
	[]string{"upstream"}, nil)

func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDepthDesc
	ch <- dlqEntriesDesc
	ch <- storeUpDesc
	ch <- breakerOpenDesc
	ch <- oldestQueuedDesc
	ch <- spoolEventsDesc
}

// Collect reports the breakers (this node's), whether the store answers,
// and the store-wide queue and DLQ sizes and oldest queued ages (the same
// on every node sharing the store: aggregate them with max, not sum).
func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	if q.app.breakers != nil {
		for upstream, open := range q.app.breakers.States() {
			v := 0.0
			if open {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(breakerOpenDesc, prometheus.GaugeValue, v, upstream)
		}
	}
	up := func(ok bool) {
		v := 0.0
		if ok {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(storeUpDesc, prometheus.GaugeValue, v)
	}
	st, err := q.app.Store()
	if err != nil {
		up(false)
		return
	}
	if sp := spoolOf(st); sp != nil { // read from memory: reported while the store is down
		ch <- prometheus.MustNewConstMetric(spoolEventsDesc, prometheus.GaugeValue, float64(sp.Stats().Events))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := st.Counts(ctx)
	if err != nil {
		up(false)
		return
	}
	up(true)
	for state, n := range map[storage.Status]int{storage.StatusQueued: c.Queued, storage.StatusInFlight: c.InFlight, storage.StatusDead: c.Dead} {
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(n), string(state))
	}
	if ages, err := q.app.oldestQueuedAges(ctx, time.Now()); err == nil {
		for _, src := range q.app.sourceNames() {
			if _, ok := ages[src]; !ok && src != alertSource {
				ages[src] = 0
			}
		}
		for src, age := range ages {
			ch <- prometheus.MustNewConstMetric(oldestQueuedDesc, prometheus.GaugeValue, age.Seconds(), src)
		}
	}
	counts, err := st.DLQCounts(ctx)
	if err != nil {
		return
	}
	for source, m := range counts {
		for status, n := range m {
			ch <- prometheus.MustNewConstMetric(dlqEntriesDesc, prometheus.GaugeValue, float64(n), source, string(status))
		}
	}
}
