package operator_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/internal/testing/openapitest"
	"github.com/hookline/hookline/storage"
)

// TestOpenAPIDocumentsEveryRoute: openapi.json is a valid OpenAPI 3.1
// document whose operations are exactly the API's routes (a route added
// without its documentation, or documented and gone, fails here), and
// GET /webhooks/openapi.json serves it.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	c := openapitest.New(t)
	var documented []string
	for _, op := range c.Operations() {
		documented = append(documented, op.Pattern())
	}
	var routes []string
	for _, p := range apiOver(newFakeApp()).Patterns() {
		if p != "/webhooks/" { // the catch-all: JSON 404 and 405
			routes = append(routes, p)
		}
	}
	slices.Sort(routes)
	if !slices.Equal(documented, routes) {
		t.Errorf("openapi.json documents\n  %q\nthe API routes\n  %q", documented, routes)
	}

	w := serve(t, operator.New(func() (operator.App, error) { return nil, operator.ErrNotRunning }), "GET", "/webhooks/openapi.json", "")
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" || !bytes.Equal(w.Body.Bytes(), operator.OpenAPI) {
		t.Fatalf("GET /webhooks/openapi.json without an app: %d %q", w.Code, w.Header().Get("Content-Type"))
	}
}

// TestOpenAPIAnswersOfTheFakeApp: the answers of every route over the
// fake app, successes and errors (400, 404, 405, 409, 413, 503), are what
// openapi.json says. The end-to-end test through Caddy does the same with
// the real app and store.
func TestOpenAPIAnswersOfTheFakeApp(t *testing.T) {
	c := openapitest.New(t)
	f := fakeWithEntries()
	f.entries["a"] = &storage.DLQEntry{ID: "a~billing", EventID: "e-a", Source: "gen", Destination: "billing", Status: storage.DLQPending,
		Attempts: []storage.Attempt{{N: 1, At: time.Now(), Status: 500, Duration: time.Millisecond, Error: "upstream answered 500"}},
		OrderKey: "cus_1", Waiting: 2, CreatedAt: time.Now()}
	f.entries["q"] = &storage.DLQEntry{ID: "q", EventID: "e-q", Source: "gen", Status: storage.DLQPending}
	f.events["gen/e-2"] = &storage.EventInfo{ID: "i-2", EventID: "e-2", Source: "gen", Status: storage.StatusQueued,
		NextAttempt: time.Now(), Deliveries: []storage.DeliveryInfo{{Destination: "default", ID: "i-2", Status: storage.StatusQueued}}}
	f.stats = operator.Stats{Queue: storage.Counts{Queued: 1, Dead: 2}, Sources: map[string]operator.SourceCounts{
		"gen": {Recent: map[string]int64{"accepted": 3, "delivered": 2, "dead": 1, "attempts": 4, "unauthorized": 1,
			operator.TypeCounter("accepted", "invoice.paid"): 3, operator.DestinationCounter("dead", "billing"): 1},
			AllTime: map[string]int64{"accepted": 3}}}}
	f.redrive = operator.Redrive{Matched: 2, Retried: []string{"p"}, Failed: map[string]error{"x": storage.ErrConflict}, Spread: time.Second}
	f.replay = operator.Replay{Matched: 1, Replayed: []operator.ReplayedEvent{{ID: "i-1", EventID: "e-1", Source: "gen", Destination: "default"}}}
	f.dedupeUntil = time.Now().Add(time.Hour)
	f.buckets, f.health = seriesBuckets(time.Now()), map[string]operator.Health{"gen": {OldestQueuedAge: 90 * time.Second, BreakerOpen: true}}
	api := apiOver(f)
	down := newFakeApp()
	down.unavailable = true
	apiDown := apiOver(down)
	sealed := fakeWithEntries()
	sealed.encryption = operator.EncryptionInfo{Enabled: true, KeyID: "0a1b2c3d", Keys: 2}
	apiSealed := apiOver(sealed)
	keyless := newFakeApp()
	keyless.fail = fmt.Errorf("DLQ entry k: %w", &storage.KeyMissingError{KeyID: "0a1b2c3d"})
	apiKeyless := apiOver(keyless)

	for _, tc := range []struct {
		api          http.Handler
		method, path string
		body         string
		want         int
	}{
		{api, "GET", "/webhooks/stats", "", 200},
		{api, "GET", "/webhooks/stats?from=1h", "", 200},
		{api, "GET", "/webhooks/stats?from=7d&source=gen", "", 200},
		{api, "GET", "/webhooks/stats?source=gen&type=invoice.paid", "", 200},
		{api, "GET", "/webhooks/stats?from=yesterday", "", 400},
		{api, "GET", "/webhooks/stats?from=1h&to=2h", "", 400},
		{api, "GET", "/webhooks/stats/series?from=15m", "", 200},
		{api, "GET", "/webhooks/stats/series?source=gen&from=7d", "", 200},
		{api, "GET", "/webhooks/stats/series?from=24h&step=30s", "", 200}, // rounded up to 1m
		{api, "GET", "/webhooks/stats/series?from=24h&step=0s", "", 400},
		{api, "GET", "/webhooks/stats/series?from=47h&step=1m", "", 400}, // 2820 points
		{apiDown, "GET", "/webhooks/stats/series", "", 503},
		{api, "GET", "/webhooks/dlq?source=gen&status=pending&limit=10&since=24h", "", 200},
		{api, "GET", "/webhooks/dlq?limit=0", "", 400},
		{api, "GET", "/webhooks/dlq?cursor=bad", "", 400},
		{api, "GET", "/webhooks/dlq/p", "", 200},
		{api, "GET", "/webhooks/dlq/r", "", 200}, // a binary payload, base64
		{api, "GET", "/webhooks/dlq/a", "", 200},
		{api, "GET", "/webhooks/dlq/nope", "", 404},
		{api, "POST", "/webhooks/dlq/p/investigate", `{"note":"looking"}`, 200},
		{api, "POST", "/webhooks/dlq/p/resolve", `{"resolution":"fixed by hand"}`, 200},
		{api, "POST", "/webhooks/dlq/r/discard", `{"reason":"test"}`, 409},
		{api, "POST", "/webhooks/dlq/q/retry", "", 200},
		{api, "POST", "/webhooks/dlq/a/discard", `{"reason":"test"}`, 200},
		{api, "POST", "/webhooks/dlq/a/resolve", `{"resolution":7}`, 400},
		{api, "POST", "/webhooks/dlq/a/retry", "", 409},
		{api, "POST", "/webhooks/dlq/nope/retry", "", 404},
		{api, "POST", "/webhooks/dlq/retry", `{"source":"gen","limit":10}`, 200},
		{api, "POST", "/webhooks/dlq/retry", `{"dry_run":true}`, 200},
		{api, "POST", "/webhooks/dlq/retry", `{"bogus":1}`, 400},
		{api, "POST", "/webhooks/dlq/retry", `{"note":"` + strings.Repeat("x", operator.MaxBody) + `"}`, 413},
		{api, "POST", "/webhooks/sources/gen/pause", "", 200},
		{api, "POST", "/webhooks/sources/gen/resume", "", 200},
		{api, "POST", "/webhooks/sources/gen/resume", "", 200}, // nothing paused: no resumed
		{api, "POST", "/webhooks/sources/bad name/pause", "", 400},
		{api, "POST", "/webhooks/sources/gen/pause", `{"reason":"upstream deploy","for":"30m","accept":true}`, 200},
		{api, "POST", "/webhooks/sources/gen/pause", `{"for":"soon"}`, 400},
		{api, "POST", "/webhooks/sources/gen/pause", `{"bogus":1}`, 400},
		{api, "POST", "/webhooks/sources/gen/destinations/billing/pause", `{"reason":"billing down"}`, 200},
		{api, "POST", "/webhooks/sources/gen/destinations/missing/pause", "", 404},
		{api, "POST", "/webhooks/sources/gen/destinations/bad name/pause", "", 400},
		{api, "POST", "/webhooks/tenants/gen/shop-1.myshopify.com/pause", `{"reason":"abuse","accept":true}`, 200},
		{api, "POST", "/webhooks/tenants/bad name/x/pause", "", 400},
		{api, "GET", "/webhooks/stats", "", 200}, // with pauses
		{api, "POST", "/webhooks/tenants/gen/shop-1.myshopify.com/resume", "", 200},
		{api, "POST", "/webhooks/tenants/gen/shop-1.myshopify.com/resume", "", 200}, // nothing paused
		{api, "POST", "/webhooks/sources/gen/destinations/billing/resume", "", 200},
		{api, "POST", "/webhooks/sources/gen/destinations/billing/resume", `{}`, 200},
		{api, "POST", "/webhooks/sources/gen/resume", `{"reason":"x"}`, 400},
		{api, "POST", "/webhooks/sources/gen/resume", "", 200},
		{api, "GET", "/webhooks/events?source=gen&status=queued&limit=10&since=24h&q=e-", "", 200},
		{api, "GET", "/webhooks/events?destination=default&type=x&until=2026-11-01T00:00:00Z&cursor=next", "", 200},
		{api, "GET", "/webhooks/events?status=pending", "", 400},
		{api, "GET", "/webhooks/events?limit=501", "", 400},
		{api, "GET", "/webhooks/events?cursor=bad", "", 400},
		{apiDown, "GET", "/webhooks/events", "", 503},
		{api, "GET", "/webhooks/events/gen/e-1", "", 200},
		{api, "GET", "/webhooks/events/gen/e-2", "", 200},
		{api, "GET", "/webhooks/events/gen/none", "", 404},
		{api, "DELETE", "/webhooks/events/gen/e-2", "", 200},
		{api, "DELETE", "/webhooks/events/gen/e-2", "", 404}, // erased already
		{api, "DELETE", "/webhooks/events/bad name/e-1", "", 400},
		{apiDown, "DELETE", "/webhooks/events/gen/e-1", "", 503},
		{api, "POST", "/webhooks/events/replay", `{"source":"gen","since":"1h","dry_run":true}`, 200},
		{api, "POST", "/webhooks/events/replay", `{"limit":5000}`, 400},
		{api, "GET", "/webhooks/openapi.json", "", 200},
		{apiDown, "GET", "/webhooks/stats", "", 503},
		{apiDown, "GET", "/webhooks/dlq", "", 503},
		{api, "GET", "/webhooks/rekey", "", 200},       // never ran
		{api, "POST", "/webhooks/rekey", "", 409},      // no key
		{apiSealed, "GET", "/webhooks/stats", "", 200}, // encryption on
		{apiSealed, "POST", "/webhooks/rekey", "", 202},
		{apiSealed, "POST", "/webhooks/rekey", "", 202}, // the running one
		{apiSealed, "POST", "/webhooks/rekey", `{"batch":50,"pause":"20ms"}`, 202},
		{apiSealed, "POST", "/webhooks/rekey", `{"batch":6000}`, 400},
		{apiSealed, "POST", "/webhooks/rekey", `{"pause":"soon"}`, 400},
		{apiSealed, "POST", "/webhooks/rekey", `{"rate":1}`, 400},
		{apiSealed, "GET", "/webhooks/rekey", "", 200},
		{apiDown, "POST", "/webhooks/rekey", "", 503},
		{api, "GET", "/webhooks/tenants/gen/alpha", "", 404}, // never started
		{api, "DELETE", "/webhooks/tenants/gen/alpha", `{"batch":50,"pause":"20ms"}`, 202},
		{api, "DELETE", "/webhooks/tenants/gen/alpha", "", 202}, // the running one
		{api, "DELETE", "/webhooks/tenants/gen/beta", `{"batch":600}`, 400},
		{api, "GET", "/webhooks/tenants/gen/alpha", "", 200},
		{apiDown, "DELETE", "/webhooks/tenants/gen/alpha", "", 503},
		{apiKeyless, "GET", "/webhooks/dlq/k", "", 409},
	} {
		r := httptest.NewRequest(tc.method, strings.ReplaceAll(tc.path, " ", "%20"), strings.NewReader(tc.body))
		if tc.body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		w := httptest.NewRecorder()
		tc.api.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, w.Code, w.Body, tc.want)
			continue
		}
		if tc.want == 400 || tc.want == 413 {
			// the document refuses these requests too: check the answer only
			c.CheckAnswer(t, r, []byte(tc.body), w.Result())
			continue
		}
		c.Check(t, r, []byte(tc.body), w.Result())
	}
	if missing := c.Unchecked(); len(missing) > 0 {
		t.Errorf("no 200 answer checked for %v", missing)
	}
}

// TestOpenAPICatchesAWrongAnswer: the checker is not blind (an answer
// with a field the document does not have, and one of the wrong type,
// fail it).
func TestOpenAPICatchesAWrongAnswer(t *testing.T) {
	c := openapitest.New(t)
	for _, body := range []string{`{"paused":true,"source":"gen","extra":1}`, `{"paused":"yes","source":"gen"}`} {
		ft := &fakeT{TB: t}
		r := httptest.NewRequest("POST", "/webhooks/sources/gen/pause", nil)
		resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: http.NoBody, Request: r}
		resp.Body = newBody(body)
		c.Check(ft, r, nil, resp)
		if !ft.failed {
			t.Errorf("answer %s passed", body)
		}
	}
}

// fakeT records a failure instead of failing the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Errorf(string, ...any) { f.failed = true }
func (f *fakeT) Fatalf(string, ...any) { f.failed = true; panic(errors.New("fatal")) }
func (f *fakeT) Helper()               {}

func newBody(s string) *readCloser { return &readCloser{strings.NewReader(s)} }

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

// TestEncryptionAnswers: the stats say whether encryption is on (never a
// key); an entry whose key is missing is a 409 ENCRYPTION_KEY_MISSING
// naming the key id; a rekey without a key is 409 ENCRYPTION_DISABLED;
// a second POST while a rekey runs returns the running one.
func TestEncryptionAnswers(t *testing.T) {
	f := newFakeApp()
	f.encryption = operator.EncryptionInfo{Enabled: true, KeyID: "0a1b2c3d", Keys: 2}
	api := apiOver(f)
	var stats operator.StatsAnswer
	decodeStatus(t, serve(t, api, "GET", "/webhooks/stats", ""), 200, &stats)
	if stats.Encryption != f.encryption {
		t.Errorf("stats encryption = %+v", stats.Encryption)
	}
	var first, second operator.RekeyAnswer
	decodeStatus(t, serve(t, api, "POST", "/webhooks/rekey", ""), 202, &first)
	decodeStatus(t, serve(t, api, "POST", "/webhooks/rekey", ""), 202, &second)
	if !first.Started || first.State != "running" || second.Started || !second.StartedAt.Equal(first.StartedAt) {
		t.Errorf("POSTs = %+v then %+v, want started then the running one", first, second)
	}

	// the pace of a rekey: passed on as asked, checked first
	for _, tc := range []struct {
		body   string
		status int
		want   storage.RekeyOptions
		err    string
	}{
		{``, 202, storage.RekeyOptions{}, ""},
		{`{}`, 202, storage.RekeyOptions{}, ""},
		{`{"batch":25,"pause":"150ms"}`, 202, storage.RekeyOptions{Batch: 25, Pause: 150 * time.Millisecond}, ""},
		{`{"batch":5000,"pause":"10s"}`, 202, storage.RekeyOptions{Batch: 5000, Pause: 10 * time.Second}, ""},
		{`{"batch":5001}`, 400, storage.RekeyOptions{}, "batch must be between 1 and 5000"},
		{`{"batch":-3}`, 400, storage.RekeyOptions{}, "batch must be between 1 and 5000"},
		{`{"pause":"11s"}`, 400, storage.RekeyOptions{}, "pause must be between 0 and 10s"},
		{`{"pause":"-1s"}`, 400, storage.RekeyOptions{}, "pause must be between 0 and 10s"},
		{`{"pause":"fast"}`, 400, storage.RekeyOptions{}, `pause: "fast" is not a duration`},
		{`{"pause":5}`, 400, storage.RekeyOptions{}, "request body"},
		{`{"batch":1,"speed":2}`, 400, storage.RekeyOptions{}, `unknown field "speed"`},
	} {
		g := newFakeApp()
		g.encryption = f.encryption
		g.rekeyOptions = storage.RekeyOptions{Batch: -99}
		var e operator.ErrorAnswer
		rec := serve(t, apiOver(g), "POST", "/webhooks/rekey", tc.body)
		if tc.status != 202 {
			decodeStatus(t, rec, tc.status, &e)
			if !strings.Contains(e.Error, tc.err) || g.rekeyOptions.Batch != -99 {
				t.Errorf("POST %s: %+v (the app was asked %+v), want %q and no rekey", tc.body, e, g.rekeyOptions, tc.err)
			}
			continue
		}
		decodeStatus(t, rec, 202, &first)
		if g.rekeyOptions != tc.want {
			t.Errorf("POST %s asked the app for %+v, want %+v", tc.body, g.rekeyOptions, tc.want)
		}
	}

	off := newFakeApp()
	var e operator.ErrorAnswer
	decodeStatus(t, serve(t, apiOver(off), "POST", "/webhooks/rekey", ""), 409, &e)
	if e.Code != operator.CodeEncryptionDisabled {
		t.Errorf("rekey without a key: %+v", e)
	}
	var st operator.StatsAnswer
	decodeStatus(t, serve(t, apiOver(off), "GET", "/webhooks/stats", ""), 200, &st)
	if st.Encryption.Enabled || st.Encryption.Keys != 0 {
		t.Errorf("stats without a key: %+v", st.Encryption)
	}

	off.fail = fmt.Errorf("DLQ entry k: %w", &storage.KeyMissingError{KeyID: "0a1b2c3d"})
	e = operator.ErrorAnswer{}
	decodeStatus(t, serve(t, apiOver(off), "GET", "/webhooks/dlq/k", ""), 409, &e)
	if e.Code != operator.CodeKeyMissing || !strings.Contains(e.Error, "0a1b2c3d") {
		t.Errorf("entry under a missing key: %+v", e)
	}
}

// decodeStatus checks an answer's status and decodes it into v.
func decodeStatus(t *testing.T, w *httptest.ResponseRecorder, status int, v any) {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status %d, want %d: %s", w.Code, status, w.Body)
	}
	if err := json.Unmarshal(w.Body.Bytes(), v); err != nil {
		t.Fatalf("answer %q: %v", w.Body, err)
	}
}
