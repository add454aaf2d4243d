package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/storage"
)

// alertSource is the internal source of alert messages; webhook sources
// cannot start with "_", so it never clashes with one.
const alertSource = "_alerts"

// AlertConfig sends Slack-compatible JSON messages ({"text": ...}) to URL
// when events enter the DLQ, when a source's deliveries fail too often, and
// on bursts of signature failures. Alerts go through the same durable
// queue as webhooks (retried, never lost) and are rate-limited: at most one
// per kind and source every MinInterval, summarizing what happened since.
// Caddyfile syntax: the alert option of App.UnmarshalCaddyfile. A zero
// threshold turns its kind of alert off.
type AlertConfig struct {
	// URL receives the alerts (placeholders such as {env.SLACK_WEBHOOK_URL}
	// are resolved at provision).
	URL string `json:"url"`
	// DLQThreshold is how many new DLQ entries trigger an alert.
	DLQThreshold int `json:"dlq_threshold,omitempty"`
	// ErrorRate is the failed share of a source's delivery attempts, in
	// (0, 1], that triggers an alert.
	ErrorRate float64 `json:"error_rate,omitempty"`
	// ErrorMinAttempts is how many attempts a source needs before its
	// error rate counts (default 20).
	ErrorMinAttempts int `json:"error_min_attempts,omitempty"`
	// SignatureFailures is how many signature failures of one source
	// within SignatureWindow trigger an alert.
	SignatureFailures int `json:"signature_failures,omitempty"`
	// SignatureWindow is the period over which signature failures are
	// counted (default 1m).
	SignatureWindow caddy.Duration `json:"signature_window,omitempty"`
	// MinInterval is the least time between two alerts of one kind and
	// source (default 5m).
	MinInterval caddy.Duration `json:"min_interval,omitempty"`
}

// Defaults of alerting.
const (
	DefaultAlertMinInterval = 5 * time.Minute
	DefaultSignatureWindow  = time.Minute
	DefaultErrorMinAttempts = 20
	alertCheckEvery         = time.Second
	errorRateWindow         = 5 * time.Minute
)

// alerter counts what may deserve an alert and sends the alerts.
type alerter struct {
	cfg AlertConfig
	app *App
	log *zap.Logger

	mu sync.Mutex
	// since the last DLQ alert: new entries by source
	dead map[string]int
	// signature failures per source in the current window
	sigStart map[string]time.Time
	sig      map[string]int
	// delivery attempts and failures per source in the current window
	errStart time.Time
	attempts map[string]int
	failures map[string]int
	// last alert per kind/source
	last map[string]time.Time
	// spool is the spooling alerts' state of the store's spool (nil:
	// none), shared with the alerters of other configs
	spool *spoolAlertState

	// client and timeout POST the alerts sent directly (sendNow)
	client  *http.Client
	timeout time.Duration
}

// newAlerter is the alerter of cfg; timeout bounds a direct POST.
func newAlerter(cfg AlertConfig, app *App, timeout time.Duration) *alerter {
	if cfg.MinInterval <= 0 {
		cfg.MinInterval = caddy.Duration(DefaultAlertMinInterval)
	}
	if cfg.SignatureWindow <= 0 {
		cfg.SignatureWindow = caddy.Duration(DefaultSignatureWindow)
	}
	if cfg.ErrorMinAttempts <= 0 {
		cfg.ErrorMinAttempts = DefaultErrorMinAttempts
	}
	return &alerter{cfg: cfg, app: app, log: app.log.Named("alerts"),
		dead: map[string]int{}, sigStart: map[string]time.Time{}, sig: map[string]int{},
		attempts: map[string]int{}, failures: map[string]int{}, last: map[string]time.Time{}, errStart: time.Now(),
		client: delivery.NewClient(1), timeout: timeout}
}

// noteResult counts a finished delivery attempt.
func (al *alerter) noteResult(r delivery.Report) {
	if r.Job.Source == alertSource {
		return // an alert about alerts would loop
	}
	al.mu.Lock()
	defer al.mu.Unlock()
	if r.Result == storage.Dead {
		al.dead[r.Job.Source]++
	}
	if r.Attempt != nil {
		al.attempts[r.Job.Source]++
		if r.Class != delivery.Success {
			al.failures[r.Job.Source]++
		}
	}
}

// noteSignatureFailure counts a failed verification.
func (al *alerter) noteSignatureFailure(source string, now time.Time) {
	al.mu.Lock()
	defer al.mu.Unlock()
	if now.Sub(al.sigStart[source]) > time.Duration(al.cfg.SignatureWindow) {
		al.sigStart[source], al.sig[source] = now, 0
	}
	al.sig[source]++
}

// allow reports whether an alert of key may be sent now, and records it.
func (al *alerter) allow(key string, now time.Time) bool {
	if last, ok := al.last[key]; ok && now.Sub(last) < time.Duration(al.cfg.MinInterval) {
		return false
	}
	al.last[key] = now
	return true
}

// alertMsg is one alert to send, with its rate-limit key.
type alertMsg struct{ key, text string }

// check decides which alerts are due; it runs every alertCheckEvery.
func (al *alerter) check(now time.Time) []alertMsg {
	al.mu.Lock()
	defer al.mu.Unlock()
	var msgs []alertMsg
	if th := al.cfg.DLQThreshold; th > 0 {
		total := 0
		for _, n := range al.dead {
			total += n
		}
		if total >= th && al.allow("dlq", now) {
			msgs = append(msgs, alertMsg{"dlq", fmt.Sprintf(":rotating_light: hookline: %d event(s) entered the dead letter queue (%s). Inspect: `caddy webhooks dlq list`.",
				total, perSource(al.dead))})
			clear(al.dead)
		}
	}
	if th := al.cfg.SignatureFailures; th > 0 {
		for src, n := range al.sig {
			if n >= th && al.allow("sig:"+src, now) {
				msgs = append(msgs, alertMsg{"sig:" + src, fmt.Sprintf(":warning: hookline: %d signature failures for source %q within %s: a wrong secret or someone probing the endpoint.",
					n, src, time.Duration(al.cfg.SignatureWindow))})
				al.sig[src] = 0
			}
		}
	}
	if rate := al.cfg.ErrorRate; rate > 0 {
		for src, n := range al.attempts {
			if f := al.failures[src]; n >= al.cfg.ErrorMinAttempts && float64(f)/float64(n) >= rate && al.allow("err:"+src, now) {
				msgs = append(msgs, alertMsg{"err:" + src, fmt.Sprintf(":warning: hookline: %d of %d deliveries for source %q failed recently (%.0f%%): is the upstream down?",
					f, n, src, 100*float64(f)/float64(n))})
			}
		}
		if now.Sub(al.errStart) > errorRateWindow {
			al.errStart = now
			clear(al.attempts)
			clear(al.failures)
		}
	}
	return msgs
}

func perSource(m map[string]int) string {
	var parts []string
	for src, n := range m {
		parts = append(parts, fmt.Sprintf("%s: %d", src, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// run checks and sends alerts until ctx ends.
func (al *alerter) run(ctx context.Context) {
	t := time.NewTicker(alertCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for _, m := range al.check(now) {
				al.send(ctx, m.key, m.text, now)
			}
			al.spoolCheck(now)
		}
	}
}

// send enqueues an alert as a job of the internal alert source: it is
// delivered (and retried) like any webhook.
func (al *alerter) send(ctx context.Context, key, text string, now time.Time) {
	body, _ := json.Marshal(map[string]string{"text": text})
	id, err := uuid.NewV7()
	if err != nil {
		return
	}
	// the URL (often a secret Slack hook) is not stored with the event:
	// delivery resolves the alert source's target from the config
	ev := &storage.Event{ID: id.String(), EventID: id.String(), Source: alertSource, Upstream: "alert",
		Headers: http.Header{"Content-Type": {"application/json"}}, Body: body, ReceivedAt: now}
	if _, err := al.app.enqueue(ctx, ev, 0); err != nil {
		al.log.Error("queueing an alert failed", zap.Error(err))
		al.mu.Lock()
		delete(al.last, key) // not sent: not rate-limited either
		al.mu.Unlock()
		return
	}
	al.log.Warn("alert queued", zap.String("text", text))
}

func validateAlertURL(u string) error {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("alert: want an http(s) URL")
	}
	return nil
}
