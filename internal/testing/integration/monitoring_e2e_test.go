package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hookline/hookline/internal/testing/openapitest"
)

// The monitoring in contrib/ (Grafana dashboard, Prometheus alerts) and
// the admin API's OpenAPI document, checked against a real Caddy.

// monitoringTraffic makes every kind of series the monitoring reads
// exist: a delivered event (plain), a dead one (gen, the upstream
// answering 422), a signature failure; it returns the dead events' DLQ
// entry ids by event id. The upstream answers 200 afterwards.
func monitoringTraffic(t *testing.T, up *upstream, dead ...string) map[string]string {
	t.Helper()
	fail := up.failWith(http.StatusUnprocessableEntity, true)
	for _, id := range dead {
		body := []byte(`{"kind":"invoice.paid","id":"` + id + `"}`)
		if resp, m := post(t, "/hooks/gen", body, signedHeaders(body, id)); resp.StatusCode != http.StatusAccepted {
			t.Fatalf("post %s: %d %v", id, resp.StatusCode, m)
		}
	}
	ids := map[string]string{}
	waitFor(t, func() bool {
		_, page := admin(t, "GET", "/webhooks/dlq?source=gen", "")
		entries, _ := page["entries"].([]any)
		for _, e := range entries {
			e := e.(map[string]any)
			ids[e["event_id"].(string)] = e["id"].(string)
		}
		return len(ids) == len(dead)
	})
	fail.Store(false)
	if resp, m := post(t, "/hooks/plain", []byte("hello"), nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("plain: %d %v", resp.StatusCode, m)
	}
	body := []byte(`{"kind":"x"}`)
	hdr := signedHeaders(body, "forged")
	hdr["X-Signature"] = "sha256=" + strings.Repeat("0", 64)
	if resp, m := post(t, "/hooks/gen", body, hdr); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("forged signature: %d %v", resp.StatusCode, m)
	}
	waitFor(t, func() bool { // the plain event delivered
		_, st := admin(t, "GET", "/webhooks/stats", "")
		total, _ := st["total"].(map[string]any)
		all, _ := total["all_time"].(map[string]any)
		return all != nil && all["delivered"] == float64(1)
	})
	return ids
}

// TestMonitoringMetricsExist: every metric name used by a panel or a
// variable of contrib/grafana/hookline.json and by an expression of
// contrib/prometheus/*-alerts.yml is in Caddy's /metrics after some
// traffic (accepted, delivered, dead, a signature failure): renaming a
// metric without the dashboard and the alerts fails here.
func TestMonitoringMetricsExist(t *testing.T) {
	used := map[string][]string{} // metric -> where
	for _, q := range dashboardQueries(t, filepath.Join("..", "..", "..", "contrib", "grafana", "hookline.json")) {
		for _, name := range promqlMetricNames(q.expr) {
			used[name] = append(used[name], q.where)
		}
	}
	rules, _ := filepath.Glob(filepath.Join("..", "..", "..", "contrib", "prometheus", "*-alerts.yml"))
	if len(rules) == 0 {
		t.Fatal("no alert rules in contrib/prometheus")
	}
	for _, f := range rules {
		for _, q := range ruleQueries(t, f) {
			for _, name := range promqlMetricNames(q.expr) {
				used[name] = append(used[name], q.where)
			}
		}
	}
	if len(used) < 8 {
		t.Fatalf("only %d metric names found in the dashboard and the rules: %v", len(used), used)
	}

	up := newUpstream(t)
	startCaddy(t, up, "", "")
	monitoringTraffic(t, up, "mon-dead")

	var missing []string
	// a margin for what the workers count after the stats monitoringTraffic
	// waited for; the DLQ gauge reads the store's counters at every scrape
	deadline := time.Now().Add(10 * time.Second)
	for {
		exposed := exposedMetrics(scrape(t))
		missing = missing[:0]
		for name := range used {
			if !exposed[name] {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	slices.Sort(missing)
	for _, name := range missing {
		t.Errorf("%s (used by %s) is not in /metrics", name, strings.Join(slices.Compact(used[name]), ", "))
	}
}

// TestPromQLMetricNames: the extraction the test above relies on.
func TestPromQLMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum by (job, source) (increase(caddy_webhooks_deliveries_total{result="dead"}[10m])) > 0`:                     {"caddy_webhooks_deliveries_total"},
		`histogram_quantile(0.99, sum by (le) (rate(a_bucket{job=~"$job", x!="by (y)"}[$__rate_interval]))) > 5`:       {"a_bucket"},
		"max by (job) (q{state=\"queued\"}) > 0\nunless on (job)\nsum by (job) (increase(d_total[15m] offset 1h)) > 0": {"d_total", "q"},
		`sum(rate(s_sum[5m])) / sum(rate(s_count[5m])) and ignoring (le) group_left (x) up_metric == bool 1e3`:         {"s_count", "s_sum", "up_metric"},
		`max(x:recorded:rate5m) without (instance) * 2 + Inf - NaN`:                                                    {"x:recorded:rate5m"},
		`{__name__="by_name"} or {__name__=~"pattern_.*"}`:                                                             {"by_name"},
	} {
		if got := promqlMetricNames(expr); !slices.Equal(got, want) {
			t.Errorf("%s: %q, want %q", expr, got, want)
		}
	}
}

type query struct{ where, expr string }

// dashboardQueries are the PromQL expressions of a Grafana dashboard: each
// panel's targets (rows' panels too) and each query variable's
// label_values/query_result argument.
func dashboardQueries(t *testing.T, file string) []query {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var dash struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var out []query
	var walk func([]json.RawMessage)
	walk = func(ps []json.RawMessage) {
		for _, r := range ps {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatalf("%s: panel: %v", file, err)
			}
			for _, tg := range p.Targets {
				if tg.Expr == "" {
					t.Errorf("%s: panel %q target %s has no expr", file, p.Title, tg.RefID)
				}
				out = append(out, query{fmt.Sprintf("panel %q", p.Title), tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	variableRe := regexp.MustCompile(`^\s*(?:label_values|query_result)\((.*?)(?:,\s*[A-Za-z_]\w*)?\s*\)\s*$`)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(v.Query, &q) != nil {
			_ = json.Unmarshal(v.Query, &q.Query) // the older form: a plain string
		}
		m := variableRe.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("%s: variable %s: query %q is not label_values(...) nor query_result(...)", file, v.Name, q.Query)
			continue
		}
		out = append(out, query{"variable " + v.Name, m[1]})
	}
	if len(out) == 0 {
		t.Fatalf("%s: no queries", file)
	}
	return out
}

// ruleQueries are the expressions of a Prometheus rule file.
func ruleQueries(t *testing.T, file string) []query {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rf struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert  string `yaml:"alert"`
				Record string `yaml:"record"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &rf); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var out []query
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			out = append(out, query{fmt.Sprintf("rule %s%s", r.Alert, r.Record), r.Expr})
		}
	}
	return out
}

// exposedMetrics are the sample names of a Prometheus text exposition.
func exposedMetrics(text string) map[string]bool {
	out := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		if i := strings.IndexAny(l, "{ "); i > 0 {
			out[l[:i]] = true
		}
	}
	return out
}

var (
	// promqlStringRe matches PromQL string literals.
	promqlStringRe = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	// promqlNameMatcherRe finds a __name__="..." matcher (before strings go).
	promqlNameMatcherRe = regexp.MustCompile(`__name__\s*=\s*"([^"]+)"`)
	// promqlLabelListRe matches the label lists of aggregations and vector
	// matching: by (a, b), without (...), on (...), ignoring (...),
	// group_left (...), group_right (...).
	promqlLabelListRe = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	// promqlTokenRe: numbers and durations first (5m, 1e3, 0x1f), then
	// identifiers (metric names may have colons).
	promqlTokenRe = regexp.MustCompile(`\d[\w.]*|[A-Za-z_:][A-Za-z0-9_:]*\s*\(?`)
)

// promqlKeywords are PromQL's words that are not metric names.
var promqlKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "by": true, "without": true, "on": true, "ignoring": true,
	"group_left": true, "group_right": true, "offset": true, "bool": true, "inf": true, "nan": true,
	"atan2": true, "start": true, "end": true, "step": true,
}

// promqlMetricNames lists, sorted and once each, the metric names an
// expression selects: identifiers that are not functions or aggregations
// (followed by "("), keywords, label names (inside {...} or a by/on/...
// list), strings, numbers or durations; plus {__name__="..."} selectors.
func promqlMetricNames(expr string) []string {
	var names []string
	for _, m := range promqlNameMatcherRe.FindAllStringSubmatch(expr, -1) {
		names = append(names, m[1])
	}
	s := promqlStringRe.ReplaceAllString(expr, `""`)
	s = regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(s, " ")  // label matchers
	s = regexp.MustCompile(`\[[^\]]*\]`).ReplaceAllString(s, " ") // ranges, subqueries
	s = promqlLabelListRe.ReplaceAllString(s, " ")
	for _, tok := range promqlTokenRe.FindAllString(s, -1) {
		tok = strings.TrimSpace(tok)
		if tok[0] >= '0' && tok[0] <= '9' || strings.HasSuffix(tok, "(") || promqlKeywords[strings.ToLower(tok)] {
			continue
		}
		names = append(names, tok)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// TestOpenAPIRealAnswers: the answers of every route of the admin API,
// from a real Caddy with its real store, match the OpenAPI document (as
// do the requests); a route the document lacks, an answer with a field it
// does not know or of the wrong type, fails. Some error answers (400,
// 404, 409) are checked too.
func TestOpenAPIRealAnswers(t *testing.T) {
	c := openapitest.New(t)
	up := newUpstream(t)
	t.Setenv("HOOKLINE_E2E_KEY", e2eKey) // encryption at rest on: the rekey routes answer 2xx
	startCaddy(t, up, defaultStorage(t)+"\n\t\tencryption_key {env.HOOKLINE_E2E_KEY}", "")
	ids := monitoringTraffic(t, up, "oa-retry", "oa-resolve", "oa-discard")

	call := func(method, path, body string, want int) {
		t.Helper()
		req, err := http.NewRequest(method, adminAddr+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want {
			t.Errorf("%s %s: %d %s, want %d", method, path, resp.StatusCode, raw, want)
			return
		}
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		req.URL.Host, req.URL.Scheme = "localhost:2019", "http" // the document's server
		if want == http.StatusBadRequest {
			c.CheckAnswer(t, req, []byte(body), resp)
			return
		}
		c.Check(t, req, []byte(body), resp)
	}
	call("GET", "/webhooks/openapi.json", "", 200)
	call("GET", "/webhooks/stats", "", 200)
	call("GET", "/webhooks/dlq?source=gen&status=pending&limit=10&since=1h", "", 200)
	call("GET", "/webhooks/dlq?limit=1", "", 200) // with a next_cursor
	call("GET", "/webhooks/dlq?limit=0", "", 400)
	call("GET", "/webhooks/dlq/"+ids["oa-retry"], "", 200)
	call("GET", "/webhooks/dlq/no-such-entry", "", 404)
	call("POST", "/webhooks/dlq/"+ids["oa-retry"]+"/investigate", `{"note":"looking"}`, 200)
	call("POST", "/webhooks/dlq/"+ids["oa-retry"]+"/retry", "", 200)
	call("POST", "/webhooks/dlq/"+ids["oa-retry"]+"/retry", "", 409)
	call("POST", "/webhooks/dlq/"+ids["oa-resolve"]+"/resolve", `{"resolution":"fixed by hand"}`, 200)
	call("POST", "/webhooks/dlq/"+ids["oa-discard"]+"/discard", `{"reason":"test event"}`, 200)
	call("POST", "/webhooks/dlq/retry", `{"source":"gen","status":"resolved","dry_run":true}`, 200)
	call("POST", "/webhooks/dlq/retry", `{"source":"gen","unknown":1}`, 400)
	waitFor(t, func() bool {
		_, ev := admin(t, "GET", "/webhooks/events/gen/oa-retry", "")
		return ev["status"] == "delivered"
	})
	call("GET", "/webhooks/events/gen/oa-retry", "", 200)
	call("GET", "/webhooks/events/gen/no-such-event", "", 404)
	call("POST", "/webhooks/events/replay", `{"source":"plain","since":"1h","dry_run":true}`, 200)
	call("POST", "/webhooks/events/replay", `{"source":"gen","limit":1}`, 200)
	call("DELETE", "/webhooks/events/gen/oa-discard", "", 200)
	call("DELETE", "/webhooks/events/gen/oa-discard", "", 404) // erased already
	call("DELETE", "/webhooks/events/bad%20name/oa-discard", "", 400)
	call("POST", "/webhooks/sources/gen/pause", "", 200)
	call("GET", "/webhooks/stats", "", 200) // with a paused source
	call("POST", "/webhooks/sources/gen/resume", "", 200)
	call("POST", "/webhooks/sources/gen/resume", "", 200) // nothing paused
	call("POST", "/webhooks/sources/bad%20name/pause", "", 400)
	call("POST", "/webhooks/sources/gen/pause", `{"reason":"upstream deploy","for":"30m","accept":true}`, 200)
	call("POST", "/webhooks/sources/gen/pause", `{"for":"-1m"}`, 400)
	call("POST", "/webhooks/sources/gen/pause", `{"bogus":true}`, 400)
	call("POST", "/webhooks/sources/plain/destinations/default/pause", `{"reason":"upstream down"}`, 200)
	call("POST", "/webhooks/sources/plain/destinations/nope/pause", "", 404)
	call("POST", "/webhooks/tenants/gen/acct-paused/pause", `{"reason":"abuse","accept":true,"for":"1h"}`, 200)
	call("POST", "/webhooks/tenants/gen/acct-paused/pause", `{"bogus":true}`, 400)
	call("GET", "/webhooks/stats", "", 200) // with a hold, a destination's pause and a tenant's
	call("GET", "/webhooks/stats?tenant=acct-paused", "", 200)
	call("GET", "/webhooks/stats?tenant=acct-paused&type=x", "", 400)
	call("POST", "/webhooks/tenants/gen/acct-paused/resume", "", 200)
	call("GET", "/webhooks/stats?from=1h&source=gen", "", 200)
	call("GET", "/webhooks/stats?from=7d", "", 200)
	call("GET", "/webhooks/events?source=gen&limit=5", "", 200)
	call("GET", "/webhooks/events?status=nope", "", 400)
	call("GET", "/webhooks/stats/series?from=15m", "", 200)
	call("GET", "/webhooks/stats/series?source=gen&from=24h", "", 200)
	call("GET", "/webhooks/stats/series?from=47h&step=1m", "", 400) // too many points
	call("POST", "/webhooks/sources/plain/destinations/default/resume", "", 200)
	call("POST", "/webhooks/sources/gen/resume", `{}`, 200)
	call("POST", "/webhooks/rekey", "", 202)
	waitFor(t, func() bool {
		_, p := admin(t, "GET", "/webhooks/rekey", "")
		return p["state"] == "done"
	})
	call("GET", "/webhooks/rekey", "", 200)
	call("GET", "/webhooks/tenants/gen/acct-oa", "", 404) // never started
	call("DELETE", "/webhooks/tenants/gen/acct-oa", `{"batch":600}`, 400)
	call("DELETE", "/webhooks/tenants/gen/acct-oa", `{"batch":10}`, 202)
	waitFor(t, func() bool {
		_, p := admin(t, "GET", "/webhooks/tenants/gen/acct-oa", "")
		return p["state"] == "done"
	})
	call("GET", "/webhooks/tenants/gen/acct-oa", "", 200)
	if missing := c.Unchecked(); len(missing) > 0 {
		t.Errorf("routes of openapi.json never answered 2xx here: %v", missing)
	}
}
