package operator_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/hookline/hookline/internal/operator"
)

// hostileValues are parameter values a client may send on purpose or by
// mistake: far times either way, year 1 (the zero time), huge and negative
// durations and numbers, overflowing integers, junk, control characters.
var hostileValues = []string{
	"", "0", "-1", "1", "-1h", "0s", "1ns", "9223372036854775807", "-9223372036854775808",
	"99999999999999999999", "2562047h", "2562048h", "106751d", "1e308", "NaN",
	"0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "1970-01-01T00:00:00Z", "2262-04-12T00:00:00Z",
	"1677-09-21T00:12:43Z", "2026-11-27T00:00:00+14:00", "tomorrow", "%00", "\x00", "a\nb",
	strings.Repeat("9", 400), strings.Repeat("x", 5000), "pending", "dead", "*", "../..", "%2F",
}

// hostileRoutes are the API's query routes and the parameters each reads.
var hostileRoutes = []struct {
	path   string
	params []string
}{
	{"/webhooks/stats", []string{"from", "to", "source", "type"}},
	{"/webhooks/stats/series", []string{"from", "to", "step", "source"}},
	{"/webhooks/dlq", []string{"source", "destination", "type", "status", "since", "until", "limit", "cursor"}},
	{"/webhooks/events", []string{"q", "source", "destination", "type", "status", "since", "until", "limit", "cursor"}},
	{"/webhooks/events/gen/evt", nil},
	{"/webhooks/dlq/p", nil},
	{"/webhooks/rekey", nil},
}

// checkAnswer fails the test on a 5xx other than the store's 503, or on an
// answer that is not JSON: every refusal is a 4xx with a JSON error.
func checkAnswer(t testing.TB, method, target string, w *httptest.ResponseRecorder) {
	t.Helper()
	if w.Code >= 500 {
		t.Fatalf("%s %q: %d %s", method, target, w.Code, w.Body)
	}
	if !json.Valid(w.Body.Bytes()) {
		t.Fatalf("%s %q: %d, not JSON: %q", method, target, w.Code, w.Body)
	}
}

// TestHostileParameters sends every hostile value in every parameter of
// every query route, alone and with the others: no panic, no 5xx, every
// answer JSON. The time and size bounds are checked before arithmetic
// (timeFilterHorizon, the step bounds), in one place for every route.
func TestHostileParameters(t *testing.T) {
	api := operator.New(func() (operator.App, error) { return newFakeApp(), nil })
	for _, rt := range hostileRoutes {
		for _, p := range rt.params {
			for _, v := range hostileValues {
				target := rt.path + "?" + url.Values{p: {v}}.Encode()
				w := httptest.NewRecorder()
				api.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
				checkAnswer(t, http.MethodGet, target, w)
			}
		}
		// every parameter at once, each with the same value
		for _, v := range hostileValues {
			q := url.Values{}
			for _, p := range rt.params {
				q.Set(p, v)
			}
			target := rt.path + "?" + q.Encode()
			w := httptest.NewRecorder()
			api.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
			checkAnswer(t, http.MethodGet, target, w)
		}
	}
	// the bodies of the POST routes, each field hostile
	for _, path := range []string{"/webhooks/dlq/retry", "/webhooks/events/replay", "/webhooks/sources/gen/pause", "/webhooks/rekey"} {
		for _, field := range []string{"source", "destination", "type", "status", "since", "until", "limit", "cursor", "dry_run", "for", "reason", "accept", "batch", "pause"} {
			for _, v := range hostileValues {
				for _, body := range []string{`{"` + field + `":` + jsonString(v) + `}`, `{"` + field + `":` + numberOrString(v) + `}`} {
					w := httptest.NewRecorder()
					api.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
					checkAnswer(t, http.MethodPost, path+" "+body, w)
				}
			}
		}
	}
}

// TestSeriesBoundsRefused: the windows the series route once answered
// wrongly are refused with a 400: a far-future to (whose arithmetic
// overflowed: a panic), from in year 1 (read as "not given": the last
// hour), and a huge step (200 with no points, from 1970).
func TestSeriesBoundsRefused(t *testing.T) {
	api := operator.New(func() (operator.App, error) { return newFakeApp(), nil })
	for _, q := range []string{
		"to=9999-12-31T23:59:59Z",
		"from=1h&to=9999-12-31T23:59:59Z",
		"from=2026-11-01T00:00:00Z&to=2262-04-12T00:00:00Z",
		"from=0001-01-01T00:00:00Z",
		"from=0001-01-01T00:00:00Z&to=9999-12-31T23:59:59Z",
		"step=2562047h",
		"step=100000h",
		"from=1h&step=9223372036854775807ns",
	} {
		w := httptest.NewRecorder()
		api.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/webhooks/stats/series?"+q, nil))
		var e operator.ErrorAnswer
		if w.Code != http.StatusBadRequest || json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Error == "" {
			t.Errorf("series?%s: %d %.200s, want a 400 JSON error", q, w.Code, w.Body)
		}
	}
}

func jsonString(v string) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// numberOrString is v as a JSON number when it reads as one, else as a
// string.
func numberOrString(v string) string {
	if json.Valid([]byte(v)) {
		return v
	}
	return jsonString(v)
}

// FuzzQueries sends fuzzed query strings to every query route: never a
// panic, never a 5xx, always JSON.
func FuzzQueries(f *testing.F) {
	for _, rt := range hostileRoutes {
		for _, p := range rt.params {
			f.Add(p + "=" + url.QueryEscape("2026-01-01T00:00:00Z"))
		}
	}
	f.Add("from=0001-01-01T00:00:00Z&to=9999-12-31T23:59:59Z&step=1ns")
	f.Add("from=1h&to=9999-12-31T23:59:59Z")
	f.Add("since=2562047h&limit=9223372036854775807&cursor=%00")
	api := operator.New(func() (operator.App, error) { return newFakeApp(), nil })
	f.Fuzz(func(t *testing.T, query string) {
		if strings.ContainsAny(query, " #\r\n") {
			return // not a query string a request line can carry
		}
		for _, rt := range hostileRoutes {
			target := rt.path + "?" + query
			if _, err := url.ParseRequestURI(target); err != nil {
				return
			}
			w := httptest.NewRecorder()
			api.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
			checkAnswer(t, http.MethodGet, target, w)
		}
	})
}
