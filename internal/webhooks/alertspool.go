package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
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

// spoolAlertState is the spooling alerts' state of one spool. It is kept
// by the spool's directory, not by the alerter: the spool and its
// spooling outlive a config, so a reload's alerter goes on where the old
// one was (an end is alerted for a start the old one alerted).
type spoolAlertState struct {
	mu       sync.Mutex
	start    spool.Change  // the current start (Spooling false: none)
	alerted  bool          // the current start was alerted
	pending  bool          // the current start waits for min_interval to be alerted
	quiet    int           // starts never alerted since the last one that was
	last     time.Time     // when a start was last alerted
	inFlight chan struct{} // closed once the last start alert's sending is over
}

var spoolAlertStates = struct {
	sync.Mutex
	m map[string]*spoolAlertState
}{m: map[string]*spoolAlertState{}}

// spoolAlertStateOf is the state of the spool in dir.
func spoolAlertStateOf(dir string) *spoolAlertState {
	spoolAlertStates.Lock()
	defer spoolAlertStates.Unlock()
	st, ok := spoolAlertStates.m[dir]
	if !ok {
		st = &spoolAlertState{}
		spoolAlertStates.m[dir] = st
	}
	return st
}

// spoolChanged alerts when this node starts spooling (its store
// unreachable, or a spool an earlier run left) and, once the spooled
// events are in the store again, that it is over: a start directly
// (sendNow), an end through the queue, as other alerts, after its start's
// alert. Both are sent in the background: the hook must not block, nor
// call the store.
func (al *alerter) spoolChanged(c spool.Change, now time.Time) {
	if al.spool == nil {
		return
	}
	text, inFlight, ok := al.spoolAlert(c, now)
	switch {
	case !ok:
	case c.Spooling:
		al.startSpoolAlert(text, inFlight)
	default:
		prev := inFlight // the start alert's, to send after it
		go func() {
			if prev != nil {
				select {
				case <-prev:
				case <-time.After(time.Minute):
				}
			}
			al.send(context.Background(), "spool-end", text, now)
		}()
	}
}

// spoolAlert decides whether change c is alerted now, and the alert's
// text. Starts are rate-limited like every alert (MinInterval): one that
// must wait is alerted by spoolCheck once it may, if still on. An end is
// alerted when its start was, so that the last alert an operator reads
// tells the node's state. inFlight is the start alert's mark (for a
// start: the new one; for an end: the last one's).
func (al *alerter) spoolAlert(c spool.Change, now time.Time) (text string, inFlight chan struct{}, ok bool) {
	st := al.spool
	st.mu.Lock()
	defer st.mu.Unlock()
	if alerted := st.note(c); !c.Spooling {
		return fmt.Sprintf(":white_check_mark: hookline on %s: the store answers again; the %d event(s) spooled since %s (%s) are in it and being delivered.",
			hostname(), c.Events, c.Since.UTC().Format(time.RFC3339), now.Sub(c.Since).Round(time.Second)), st.inFlight, alerted
	}
	text, ok = al.spoolStartText(now)
	return text, st.inFlight, ok
}

// note records change c (st.mu held): a start waits to be alerted; an
// end clears it, counting a start never alerted. It reports whether the
// start that c ends was alerted. The app notes changes without alerts
// too, so that a later config with alerts knows the node's state.
func (st *spoolAlertState) note(c spool.Change) (alerted bool) {
	if c.Spooling {
		st.start, st.alerted, st.pending = c, false, true
		return false
	}
	alerted = st.alerted
	if st.pending {
		st.quiet++ // over before it could be alerted
	}
	st.start, st.alerted, st.pending = spool.Change{}, false, false
	return alerted
}

// noteLocked is note with st.mu taken.
func (st *spoolAlertState) noteLocked(c spool.Change) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.note(c)
}

// spoolCheck alerts a start that had to wait for MinInterval, once it
// may; it runs with the other checks.
func (al *alerter) spoolCheck(now time.Time) {
	if al.spool == nil {
		return
	}
	al.spool.mu.Lock()
	text, ok := "", false
	if al.spool.pending {
		text, ok = al.spoolStartText(now)
	}
	done := al.spool.inFlight
	al.spool.mu.Unlock()
	if ok {
		al.startSpoolAlert(text, done)
	}
}

// spoolStartText is the alert of the pending start, when MinInterval
// allows one now (st.mu held).
func (al *alerter) spoolStartText(now time.Time) (string, bool) {
	st := al.spool
	if !st.last.IsZero() && now.Sub(st.last) < time.Duration(al.cfg.MinInterval) {
		return "", false
	}
	c := st.start
	text := fmt.Sprintf(":rotating_light: hookline on %s: the store is unreachable (since %s); events are accepted into this node's spool and delivered once it answers again (deliveries wait meanwhile). Watch: `caddy webhooks stats`.",
		hostname(), c.Since.UTC().Format(time.RFC3339))
	if c.Earlier {
		text = fmt.Sprintf(":warning: hookline on %s: started with %d event(s) in its spool, spooled since %s by an earlier run; they are moved into the store once it answers. Watch: `caddy webhooks stats`.",
			hostname(), c.Events, c.Since.UTC().Format(time.RFC3339))
	}
	if st.quiet > 0 {
		text += fmt.Sprintf(" (%d earlier spooling period(s) since the last alert of this kind.)", st.quiet)
	}
	st.quiet, st.last, st.alerted, st.pending = 0, now, true, false
	// an end reads it, under the same lock, to wait for this alert
	st.inFlight = make(chan struct{})
	return text, true
}

// startSpoolAlert sends a start alert in the background and closes done
// (the state's inFlight for it) when it is over.
func (al *alerter) startSpoolAlert(text string, done chan struct{}) {
	go func() {
		defer close(done)
		al.sendNow(context.Background(), "spool", text)
	}()
}

func hostname() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "this node"
}

// sendNow POSTs an alert directly, trying spoolAlertTries times, and
// queues it when none succeeded. It does not end with the config that
// started it: a reload must not lose the alert.
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
