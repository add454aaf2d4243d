package ingress

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/dedupe"
	"github.com/hookline/hookline/fields"
	"github.com/hookline/hookline/storage"
)

// provisionCase is a source's JSON config and what provisioning says
// (wantErr "": no error; else a part of the error).
type provisionCase struct {
	name, config, wantErr string
}

// checkProvision provisions head+config of each case and checks the error.
func checkProvision(t *testing.T, head string, cases []provisionCase) {
	t.Helper()
	for _, tc := range cases {
		h, err := loadSource(t, head+tc.config)
		if err == nil {
			h.Cleanup()
		}
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

// TestDestinationConfig: what provisioning refuses, each with its reason.
func TestDestinationConfig(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	checkProvision(t, `{"source":"s","verify":{"scheme":"none"}`, []provisionCase{
		{"forward_to alone", `,"forward_to":"http://127.0.0.1:1/"}`, ""},
		{"destinations alone", `,"destinations":[{"name":"a","url":"http://127.0.0.1:1/a"}]}`, ""},
		{"default named without forward_to", `,"destinations":[{"name":"default","url":"http://127.0.0.1:1/","events":["x.*"]}]}`, ""},
		{"neither", `}`, "forward_to must be an http(s) URL"},
		{"bad forward_to", `,"forward_to":"ftp://x/"}`, "forward_to must be an http(s) URL"},
		{"default twice", `,"forward_to":"http://127.0.0.1:1/","destinations":[{"name":"default","url":"http://127.0.0.1:1/"}]}`,
			"destination default: forward_to is the destination named default"},
		{"name twice", `,"destinations":[{"name":"a","url":"http://127.0.0.1:1/"},{"name":"a","url":"http://127.0.0.1:2/"}]}`,
			"destination a is defined more than once"},
		{"bad name", `,"destinations":[{"name":"a~b","url":"http://127.0.0.1:1/"}]}`, `destination 1: destination name "a~b"`},
		{"bad URL", `,"destinations":[{"name":"a","url":"127.0.0.1:1"}]}`, "destination a: the URL must be an http(s) URL"},
		{"bad glob", `,"destinations":[{"name":"a","url":"http://127.0.0.1:1/","events":[""]}]}`, "destination a: events: invalid glob"},
		{"bad when", `,"destinations":[{"name":"a","url":"http://127.0.0.1:1/","when":[{"kind":"query","path":"x","value":"y"}]}]}`,
			"destination a: when: kind must be json, header or form"},
		{"bad retry", `,"destinations":[{"name":"a","url":"http://127.0.0.1:1/","retry":{"max_attempts":-1}}]}`, "destination a: retry:"},
		{"bad rate", `,"destinations":[{"name":"a","url":"http://127.0.0.1:1/","rate_limit":{"events":0,"interval":"1s"}}]}`,
			"destination a: rate_limit must be positive"},
		{"bad signing secret", `,"destinations":[{"name":"a","url":"http://127.0.0.1:1/","sign_forwarded":["whsec_c2hvcnQ="]}]}`,
			"destination a: sign_forwarded secret 1"},
		{"ordered alike", `,"forward_to":"http://127.0.0.1:1/","ordered":{"kind":"json","arg":"k"},"destinations":[{"name":"a","url":"http://127.0.0.1:1/","ordered":{"kind":"json","arg":"k","on_dead":"skip"}}]}`, ""},
		{"ordered by two rules", `,"forward_to":"http://127.0.0.1:1/","ordered":{"kind":"json","arg":"k"},"destinations":[{"name":"a","url":"http://127.0.0.1:1/","ordered":{"kind":"header","arg":"X-K"}}]}`,
			"destination a: ordered header X-K: every ordered destination of a source orders by the same rule (here also json k)"},
		{"ordered bad kind", `,"forward_to":"http://127.0.0.1:1/","ordered":{"kind":"raw_hash","arg":"k"}}`, "ordered: the key is found by header, json or form"},
		{"ordered bad on_dead", `,"destinations":[{"name":"a","url":"http://127.0.0.1:1/","ordered":{"kind":"json","arg":"k","on_dead":"drop"}}]}`,
			"destination a: ordered: on_dead must be block or skip"},
		{"tls on http", `,"forward_to":"http://127.0.0.1:1/","tls":{"server_name":"x"}}`, "tls_* options need an https URL"},
		{"tls inherited by an http destination", `,"forward_to":"https://127.0.0.1:1/","tls":{"server_name":"x"},"destinations":[{"name":"a","url":"http://127.0.0.1:1/"}]}`,
			"destination a: tls_* options need an https URL"},
		{"tls key without certificate", `,"forward_to":"https://127.0.0.1:1/","tls":{"client_certificate_key_file":"/k"}}`,
			"tls_client_auth wants both a certificate file and a key file"},
		{"tls CA file missing", `,"destinations":[{"name":"a","url":"https://127.0.0.1:1/","tls":{"root_ca_pem_files":["/nonexistent/ca.pem"]}}]}`,
			"destination a: tls_trusted_ca_certs: open /nonexistent/ca.pem"},
		{"tls CA file without PEM", `,"destinations":[{"name":"a","url":"https://127.0.0.1:1/","tls":{"root_ca_pem_files":["` + notPEM + `"]}}]}`,
			"destination a: tls_trusted_ca_certs: no PEM certificate in"},
		{"tls client pair missing", `,"forward_to":"https://127.0.0.1:1/","tls":{"client_certificate_file":"/nonexistent/c.pem","client_certificate_key_file":"/nonexistent/c.key"}}`,
			"tls_client_auth: open /nonexistent/c.pem"},
		{"timeout beyond the lease", `,"destinations":[{"name":"a","url":"http://127.0.0.1:1/","timeout":"2m"}]}`,
			"destination a: timeout 2m0s must be shorter than the webhooks lease"},
	})
}

// TestDestinationOptionsOverride: a destination's option replaces the
// source's there; one it leaves out is the source's.
func TestDestinationOptionsOverride(t *testing.T) {
	h := provisionSource(t, `{"source":"over","verify":{"scheme":"none"},"forward_to":"http://127.0.0.1:1/",
		"timeout":"5s","retry":{"max_attempts":3},"rate_limit":{"events":10,"interval":"1s"},
		"destinations":[
			{"name":"own","url":"http://127.0.0.1:2/","timeout":"2s","retry":{"max_attempts":8},"rate_limit":{"events":1,"interval":"1m"},
			 "sign_forwarded":["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]},
			{"name":"inherits","url":"http://127.0.0.1:3/"}]}`)
	t.Cleanup(func() { h.Cleanup() })
	src := h.source()
	if def := src.Destinations["default"]; def.URL != "http://127.0.0.1:1/" || def.Timeout != 5*time.Second || def.Policy.MaxAttempts != 3 || def.Signer != nil {
		t.Errorf("default target %+v", def)
	}
	own, inherits := src.Destinations["own"], src.Destinations["inherits"]
	if own.URL != "http://127.0.0.1:2/" || own.Timeout != 2*time.Second || own.Policy.MaxAttempts != 8 ||
		own.Rate != (storage.Rate{Events: 1, Per: time.Minute}) || own.Signer == nil {
		t.Errorf("own target %+v", own)
	}
	if inherits.URL != "http://127.0.0.1:3/" || inherits.Timeout != 5*time.Second || inherits.Policy.MaxAttempts != 3 ||
		inherits.Rate != (storage.Rate{Events: 10, Per: time.Second}) {
		t.Errorf("inherited target %+v", inherits)
	}
}

// TestRoutingOrderKeys: the deliveries of ordered destinations carry the
// key their rule finds (normalized), with their own on_dead; an event
// without a key, or to an unordered destination, is not ordered; a source
// whose one destination is ordered keeps it stored as before plus its key.
func TestRoutingOrderKeys(t *testing.T) {
	h := provisionSource(t, `{"source":"keyed","verify":{"scheme":"none"},"forward_to":"http://127.0.0.1:1/",
		"ordered":{"kind":"json","arg":"data.customer"},
		"destinations":[
			{"name":"skip","url":"http://127.0.0.1:2/","ordered":{"kind":"json","arg":"data.customer","on_dead":"skip"}},
			{"name":"inherits","url":"http://127.0.0.1:3/"}]}`)
	t.Cleanup(func() { h.Cleanup() })
	single := provisionSource(t, `{"source":"single","verify":{"scheme":"none"},"forward_to":"http://127.0.0.1:1/","ordered":{"kind":"header","arg":"X-Key"}}`)
	t.Cleanup(func() { single.Cleanup() })
	long := strings.Repeat("k", 300)
	for _, tc := range []struct {
		name   string
		h      *Ingress
		body   string
		header string
		want   string
	}{
		{"keyed", h, `{"data":{"customer":"cus_1"}}`, "", "[{default cus_1 false} {skip cus_1 true} {inherits cus_1 false}]"},
		{"no key", h, `{"data":{}}`, "", "[{default  false} {skip  false} {inherits  false}]"},
		{"long key normalized", h, `{"data":{"customer":"` + long + `"}}`, "", "[{default " + dedupe.Normalize(long) + " false} {skip " + dedupe.Normalize(long) + " true} {inherits " + dedupe.Normalize(long) + " false}]"},
		{"single keyed", single, `{}`, "k-1", "[{default k-1 false}]"},
		{"single without key: stored as before", single, `{}`, "", "[]"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
		if tc.header != "" {
			r.Header.Set("X-Key", tc.header)
		}
		ds, ok := tc.h.route("", fields.Read(r, []byte(tc.body)))
		if !ok {
			t.Fatalf("%s: ignored", tc.name)
		}
		var got []string
		for _, d := range ds {
			got = append(got, fmt.Sprintf("{%s %s %v}", d.Destination, d.OrderKey, d.OrderSkip))
		}
		if s := "[" + strings.Join(got, " ") + "]"; s != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, s, tc.want)
		}
	}
}

// TestRouting: which destinations take an event, from the type its
// type_from finds and the request's fields; no filter at all routes
// without looking at the event.
func TestRouting(t *testing.T) {
	h := provisionSource(t, `{"source":"routed","verify":{"scheme":"none"},"forward_to":"http://127.0.0.1:1/","type_from":[{"kind":"json","arg":"type"}],
		"destinations":[
			{"name":"billing","url":"http://127.0.0.1:2/","events":["invoice.*","customer.subscription.*"],"when":[{"kind":"json","path":"livemode","value":"true"}]},
			{"name":"shop","url":"http://127.0.0.1:3/","when":[{"kind":"header","path":"X-Shop","value":"eu"}]}]}`)
	t.Cleanup(func() { h.Cleanup() })
	only := provisionSource(t, `{"source":"only","verify":{"scheme":"none"},"type_from":[{"kind":"json","arg":"type"}],"destinations":[{"name":"billing","url":"http://127.0.0.1:2/","events":["invoice.*"]}]}`)
	t.Cleanup(func() { only.Cleanup() })
	plain := provisionSource(t, `{"source":"plain","verify":{"scheme":"none"},"forward_to":"http://127.0.0.1:1/","destinations":[{"name":"audit","url":"http://127.0.0.1:4/"}]}`)
	t.Cleanup(func() { plain.Cleanup() })
	if !h.filtered || plain.filtered {
		t.Fatalf("filtered: %v %v", h.filtered, plain.filtered)
	}
	for _, tc := range []struct {
		name   string
		h      *Ingress
		body   string
		header string
		want   []string // destinations; nil: the default alone, stored as before; "ignored": none
	}{
		{"default only", h, `{"type":"charge.succeeded","livemode":true}`, "", nil},
		{"billing too", h, `{"type":"invoice.paid","livemode":true}`, "", []string{"default", "billing"}},
		{"billing glob crosses dots", h, `{"type":"customer.subscription.trial_will_end","livemode":true}`, "", []string{"default", "billing"}},
		{"test mode skips billing", h, `{"type":"invoice.paid","livemode":false}`, "", nil},
		{"header condition", h, `{"type":"invoice.paid","livemode":true}`, "eu", []string{"default", "billing", "shop"}},
		{"untyped", h, `{"livemode":true}`, "eu", []string{"default", "shop"}},
		{"no destination takes it", only, `{"type":"charge.succeeded"}`, "", []string{"ignored"}},
		{"the named one alone", only, `{"type":"invoice.paid"}`, "", []string{"billing"}},
		{"no filter: everything", plain, `not json`, "", []string{"default", "audit"}},
	} {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
		if tc.header != "" {
			r.Header.Set("X-Shop", tc.header)
		}
		q := fields.Read(r, []byte(tc.body))
		var typ string
		if tc.h.filtered {
			typ = dedupe.FindType(q, tc.h.typeRules)
		}
		ds, ok := tc.h.route(typ, q)
		var got []string
		switch {
		case !ok:
			got = []string{"ignored"}
		case ds != nil:
			for _, d := range ds {
				got = append(got, d.Destination)
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: routed to %q, want %q", tc.name, got, tc.want)
		}
	}
}
