package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/hookline/hookline/internal/delivery"
	"github.com/hookline/hookline/storage/spool"
)

// spoolAlertTries are the waits before each direct try of a spooling
// alert: the queue alerts normally go through is the store that is
// unreachable, so the alert is POSTed at once, and only queued (spooled,
// sent once the store is back) when every try failed.
var spoolAlertTries = []time.Duration{0, 2 * time.Second, 10 * time.Second}

// spoolChanged alerts when this node starts spooling (its store
// unreachable, or a spool an earlier run left) and, once the spooled
// events are in the store again, that it is over: a start directly
// (sendNow), an end through the queue, as other alerts.
func (al *alerter) spoolChanged(ctx context.Context, c spool.Change, now time.Time) {
	text, ok := al.spoolAlert(c, now)
	switch {
	case !ok:
	case c.Spooling:
		go al.sendNow(ctx, "spool", text)
	default:
		al.send(ctx, "spool-end", text, now)
	}
}

// spoolAlert decides whether change c is alerted, and the alert's text.
// Starts are rate-limited like every alert (MinInterval); an end is
// alerted for each start alerted, so that the last alert an operator
// reads tells the node's state.
func (al *alerter) spoolAlert(c spool.Change, now time.Time) (string, bool) {
	host, _ := os.Hostname()
	if host == "" {
		host = "this node"
	}
	al.mu.Lock()
	defer al.mu.Unlock()
	if !c.Spooling {
		alerted := al.spoolAlerted
		al.spoolAlerted = false
		return fmt.Sprintf(":white_check_mark: hookline on %s: the store answers again; the %d event(s) spooled since %s (%s) are in it and being delivered.",
			host, c.Events, c.Since.UTC().Format(time.RFC3339), now.Sub(c.Since).Round(time.Second)), alerted
	}
	if !al.allow("spool", now) {
		al.spoolQuiet++
		al.spoolAlerted = false
		return "", false
	}
	quiet := al.spoolQuiet
	al.spoolQuiet, al.spoolAlerted = 0, true
	text := fmt.Sprintf(":rotating_light: hookline on %s: the store is unreachable; events are accepted into this node's spool and delivered once it answers again (deliveries wait meanwhile). Watch: `caddy webhooks stats`.", host)
	if c.Earlier {
		text = fmt.Sprintf(":warning: hookline on %s: started with %d event(s) in its spool, spooled since %s by an earlier run; they are moved into the store once it answers. Watch: `caddy webhooks stats`.",
			host, c.Events, c.Since.UTC().Format(time.RFC3339))
	}
	if quiet > 0 {
		text += fmt.Sprintf(" (%d earlier spooling period(s) since the last alert of this kind.)", quiet)
	}
	return text, true
}

// sendNow POSTs an alert directly, trying spoolAlertTries times, and
// queues it when none succeeded.
func (al *alerter) sendNow(ctx context.Context, key, text string) {
	var err error
	for _, wait := range spoolAlertTries {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return
		}
		if err = al.post(ctx, text); err == nil {
			al.log.Warn("alert sent", zap.String("text", text))
			return
		}
	}
	al.log.Error("sending an alert directly failed; it is queued instead", zap.String("error", err.Error()))
	al.send(ctx, key, text, time.Now())
}

// post sends one alert to the alert URL, within the alert target's
// timeout; errors never name the URL (a Slack hook's is a secret).
func (al *alerter) post(ctx context.Context, text string) error {
	body, _ := json.Marshal(map[string]string{"text": text})
	ctx, cancel := context.WithTimeout(ctx, al.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, al.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("the alert URL does not make a request")
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := al.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s", delivery.Describe(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("the alert URL answered %d", resp.StatusCode)
	}
	return nil
}
