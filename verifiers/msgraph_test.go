package verifiers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// Microsoft Graph signs nothing and publishes no vector: the cases below
// are the documented payloads of
// microsoftgraph/microsoft-graph-docs-contrib
// concepts/change-notifications-delivery-webhooks.md (the change
// notification example, clientState "secretClientValue") and
// concepts/change-notifications-lifecycle-events.md (the lifecycle
// notification structure), and the validation request of
// concepts/includes/change-notifications-delivery-notificationurl-validation.md.
const graphState = "secretClientValue"

// graphBody is the documented change notification (written compactly)
// carrying clientState.
func graphBody(clientState string) string {
	return `{"value":[{"id":"lsgTZMr9KwAAA","subscriptionId":"{subscription_guid}","subscriptionExpirationDateTime":"2016-03-19T22:11:09.952Z","clientState":` +
		strings.TrimSpace(mustJSON(clientState)) + `,"changeType":"created","resource":"users/{user_guid}@{tenant_guid}/messages/{long_id_string}","tenantId":"84bd8158-6d4d-4958-8b9f-9d6445542f95",` +
		`"resourceData":{"@odata.type":"#Microsoft.Graph.Message","@odata.id":"Users/{user_guid}@{tenant_guid}/Messages/{long_id_string}","@odata.etag":"W/\"CQAAABYAAADkrWGo7bouTKlsgTZMr9KwAAAUWRHf\"","id":"{long_id_string}"}}]}`
}

// graphLifecycle is a documented lifecycle notification carrying
// clientState.
func graphLifecycle(clientState, event string) string {
	return `{"value":[{"subscriptionId":"<subscription_guid>","subscriptionExpirationDateTime":"2019-03-20T11:00:00.0000000Z","tenantId":"<tenant_guid>","clientState":` +
		mustJSON(clientState) + `,"lifecycleEvent":"` + event + `"}]}`
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestMSGraphVerify(t *testing.T) {
	one := MSGraph{SecretsConfig: keyed(graphState)}
	two := MSGraph{SecretsConfig: keyed("otherSubscriptionState", graphState)}
	item := func(state string) string { return `{"changeType":"updated","clientState":` + mustJSON(state) + `}` }
	batch := func(items ...string) string { return `{"value":[` + strings.Join(items, ",") + `]}` }
	runVerifyCases(t, newRequest, []verifyCase[MSGraph]{
		{name: "docs change notification", cfg: one, body: graphBody(graphState)},
		{name: "docs lifecycle notification", cfg: one, body: graphLifecycle(graphState, "reauthorizationRequired")},
		{name: "wrong clientState", cfg: one, body: graphBody("secretClientValuf"), want: ErrMismatch},
		{name: "clientState differs in case", cfg: one, body: graphBody("SECRETCLIENTVALUE"), want: ErrMismatch},
		{name: "batch, every clientState right", cfg: one, body: batch(item(graphState), item(graphState))},
		{name: "batch of two subscriptions, each one configured", cfg: two, body: batch(item(graphState), item("otherSubscriptionState"))},
		{name: "batch, last clientState wrong", cfg: one, body: batch(item(graphState), item("forged")), want: ErrMismatch},
		{name: "batch, first clientState wrong", cfg: one, body: batch(item("forged"), item(graphState)), want: ErrMismatch},
		{name: "batch, one without clientState", cfg: one, body: batch(item(graphState), `{"changeType":"updated"}`), want: ErrFormat},
		{name: "empty clientState", cfg: one, body: batch(item("")), want: ErrFormat},
		{name: "clientState null", cfg: one, body: `{"value":[{"clientState":null}]}`, want: ErrFormat},
		{name: "clientState not a string", cfg: one, body: `{"value":[{"clientState":1}]}`, want: ErrFormat},
		{name: "member names are exact: ClientState", cfg: one, body: `{"value":[{"ClientState":"secretClientValue"}]}`, want: ErrFormat},
		{name: "member names are exact: Value", cfg: one, body: `{"Value":[{"clientState":"secretClientValue"}]}`, want: ErrFormat},
		{name: "no notification", cfg: one, body: `{"value":[]}`, want: ErrFormat},
		{name: "value not an array", cfg: one, body: `{"value":{"clientState":"secretClientValue"}}`, want: ErrFormat},
		{name: "an item not an object", cfg: one, body: `{"value":[{"clientState":"secretClientValue"},"x"]}`, want: ErrFormat},
		{name: "not JSON", cfg: one, body: `value=secretClientValue`, want: ErrFormat},
		{name: "empty body (a validation request without its token)", cfg: one, body: ``, want: ErrFormat},
		{name: "a JSON array", cfg: one, body: `[{"clientState":"secretClientValue"}]`, want: ErrFormat},
	}, graphState, "otherSubscriptionState")
}

func TestMSGraphValidation(t *testing.T) {
	m := provision(t, MSGraph{SecretsConfig: keyed(graphState)})
	const real = "Validation: Testing client application reachability for subscription Request-Id: 522a8e7e-096a-494c-aaf1-ac0dcfca45b7"
	for _, tc := range []struct {
		name, query, body string
		status            int // 0: not a handshake
		want              string
	}{
		{name: "Graph's token, %20-encoded", query: "validationToken=" + url.PathEscape(real), status: 200, want: real},
		{name: "Graph's token, form-encoded", query: "validationToken=" + url.QueryEscape(real), status: 200, want: real},
		{name: "other query parameters of notificationUrl kept", query: "tenant=a&validationToken=abc", status: 200, want: "abc"},
		{name: "a body does not matter", query: "validationToken=abc", body: graphBody("forged"), status: 200, want: "abc"},
		{name: "longest token", query: "validationToken=" + strings.Repeat("a", maxGraphValidationToken), status: 200, want: strings.Repeat("a", maxGraphValidationToken)},
		{name: "too long", query: "validationToken=" + strings.Repeat("a", maxGraphValidationToken+1), status: 401},
		{name: "empty", query: "validationToken=", status: 401},
		{name: "twice", query: "validationToken=a&validationToken=b", status: 401},
		{name: "markup", query: "validationToken=" + url.QueryEscape("<script>alert(1)</script>"), status: 401},
		{name: "ampersand", query: "validationToken=" + url.QueryEscape("a&b"), status: 401},
		{name: "quote", query: "validationToken=" + url.QueryEscape(`a"b`), status: 401},
		{name: "new line", query: "validationToken=" + url.QueryEscape("a\r\nSet-Cookie: x"), status: 401},
		{name: "non-ASCII", query: "validationToken=" + url.QueryEscape("é"), status: 401},
		{name: "NUL", query: "validationToken=%00", status: 401},
		{name: "no token: a notification", query: "", body: graphBody(graphState)},
		{name: "another name", query: "validationtoken=abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/hooks/graph?"+tc.query, strings.NewReader(tc.body))
			r.Header.Set("Content-Type", "text/plain; charset=utf-8")
			w := httptest.NewRecorder()
			got := m.HandshakeUnsigned(w, r, []byte(tc.body))
			if got != (tc.status != 0) {
				t.Fatalf("HandshakeUnsigned = %v", got)
			}
			if !got {
				if w.Body.Len() != 0 || len(w.Header()) != 0 {
					t.Fatalf("wrote an answer for a non-handshake: %q", w.Body.String())
				}
				return
			}
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d (%s)", w.Code, tc.status, w.Body.String())
			}
			if tc.status != 200 {
				var e map[string]any
				if json.Unmarshal(w.Body.Bytes(), &e) != nil || e["code"] != "INVALID_SIGNATURE_FORMAT" {
					t.Fatalf("answer %q", w.Body.String())
				}
				return
			}
			if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || w.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Fatalf("headers %v", w.Header())
			}
			if w.Body.String() != tc.want {
				t.Fatalf("echoed %q, want %q", w.Body.String(), tc.want)
			}
		})
	}
}

// FuzzMSGraphBody feeds arbitrary bodies: Verify must never panic, report
// only ErrFormat or ErrMismatch, and accept a body only when it is a JSON
// object whose "value" is a non-empty array of objects, each with a
// "clientState" string that is one of the configured secrets (checked
// here with a generic JSON decoding).
func FuzzMSGraphBody(f *testing.F) {
	f.Add([]byte(graphBody(graphState)))
	f.Add([]byte(graphLifecycle(graphState, "missed")))
	f.Add([]byte(`{"value":[{"clientState":"secretClientValue"},{"clientState":"x"}]}`))
	f.Add([]byte(`{"value":[{"clientState":"secretClientValue","clientState":"x"}]}`))
	f.Add([]byte(`{"Value":[{"ClientState":"secretClientValue"}]}`))
	f.Add([]byte(`{"value":[]}`))
	secrets := []string{graphState, "second"}
	m := provision(f, MSGraph{SecretsConfig: keyed(secrets...)})
	f.Fuzz(func(t *testing.T, body []byte) {
		if fuzzRefused(t, m.Verify(newRequest(), body, conformanceNow), false, secrets...) {
			return
		}
		var coll map[string]any
		if json.Unmarshal(body, &coll) != nil {
			t.Fatalf("accepted a body that is no JSON object: %q", body)
		}
		items, ok := coll["value"].([]any)
		if !ok || len(items) == 0 {
			t.Fatalf("accepted a body without notifications: %q", body)
		}
		for _, it := range items {
			obj, ok := it.(map[string]any)
			if !ok {
				t.Fatalf("accepted a notification that is no object: %q", body)
			}
			if s, _ := obj["clientState"].(string); s != secrets[0] && s != secrets[1] {
				t.Fatalf("accepted clientState %q: %q", s, body)
			}
		}
	})
}

// FuzzMSGraphValidationToken feeds arbitrary query strings: the validation
// answer is either no handshake (no validationToken), a 401, or a 200 that
// echoes exactly the one decoded validationToken, which is printable
// ASCII without markup characters and at most maxGraphValidationToken
// bytes.
func FuzzMSGraphValidationToken(f *testing.F) {
	f.Add("validationToken=Validation%3A%20Testing%20client%20application%20reachability")
	f.Add("validationToken=%3Cb%3E")
	f.Add("validationToken=a&validationToken=b")
	f.Add("x=1")
	m := provision(f, MSGraph{SecretsConfig: keyed(graphState)})
	f.Fuzz(func(t *testing.T, rawQuery string) {
		r := httptest.NewRequest(http.MethodPost, "/hooks/graph", nil)
		r.URL.RawQuery = rawQuery
		w := httptest.NewRecorder()
		if !m.HandshakeUnsigned(w, r, nil) {
			if r.URL.Query().Has(GraphValidationTokenParam) {
				t.Fatal("a validationToken left to Verify")
			}
			return
		}
		if w.Code != http.StatusOK {
			if w.Code != http.StatusUnauthorized {
				t.Fatalf("status %d", w.Code)
			}
			return
		}
		vals := r.URL.Query()[GraphValidationTokenParam]
		if len(vals) != 1 || w.Body.String() != vals[0] || !validGraphToken(vals[0]) {
			t.Fatalf("echoed %q for %q", w.Body.String(), rawQuery)
		}
		if strings.ContainsAny(w.Body.String(), "<>&\"'`\r\n\x00") || w.Body.Len() > maxGraphValidationToken {
			t.Fatalf("echoed unsafe %q", w.Body.String())
		}
	})
}

// TestMSGraphNoDefaultID: why msgraph has no default id. Two distinct
// reauthorizationRequired notifications of one subscription are
// byte-identical in the corpus (as Graph sends them, repeatedly), so a
// hash of the bytes would answer the second "already processed" and
// drop it; with no rule each gets a generated id.
func TestMSGraphNoDefaultID(t *testing.T) {
	var same []corpusSample
	for _, s := range loadCorpus(t) {
		if s.Scheme == "msgraph" && s.File == "msgraph/lifecycle_reauthorizationRequired.json" {
			same = append(same, s)
		}
	}
	if len(same) != 2 || same[0].Event == same[1].Event || string(same[0].body) != string(same[1].body) {
		t.Fatalf("want two distinct byte-identical notifications, got %d", len(same))
	}
	raw := []IDRule{idRawHash()}
	if a, b := extractDefault(rulesOnly(raw), same[0], conformanceNow), extractDefault(rulesOnly(raw), same[1], conformanceNow); a != b {
		t.Fatalf("raw_hash differs (%s, %s): the premise no longer holds", a, b)
	}
	if rules := (&MSGraph{}).DefaultIDFrom(); len(rules) != 0 {
		t.Fatalf("default id rules %q", ruleStrings(rules))
	}
}

// rulesOnly is an IDDefaulter returning rules.
type rulesOnly []IDRule

func (r rulesOnly) DefaultIDFrom() []IDRule { return r }
