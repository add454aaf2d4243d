package verifiers

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// testContext returns a Caddy context for provisioning modules in tests.
func testContext(t testing.TB) caddy.Context {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	return ctx
}

// newRequest returns a POST request with the given header name/value pairs.
func newRequest(headers ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/hook", nil)
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Add(headers[i], headers[i+1])
	}
	return r
}

// checkErr fails unless err wraps want (nil: err must be nil), and unless
// the error text is free of every string in secret.
func checkErr(t *testing.T, err, want error, secret ...string) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("got error %v, want success", err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("got error %v, want %v", err, want)
	}
	if err != nil {
		for _, s := range secret {
			if s != "" && strings.Contains(err.Error(), s) {
				t.Fatalf("error text %q leaks %q", err, s)
			}
		}
	}
}

// provision provisions the scheme v, failing t on an error.
func provision[T any, P interface {
	*T
	caddy.Provisioner
}](t testing.TB, v T) P {
	t.Helper()
	p := P(&v)
	if err := p.Provision(testContext(t)); err != nil {
		t.Fatalf("provision: %v", err)
	}
	return p
}

// keyed is the SecretsConfig of secrets.
func keyed(secrets ...string) SecretsConfig { return SecretsConfig{Secrets: secrets} }

// tolerance is the ToleranceConfig of tol.
func tolerance(tol time.Duration) ToleranceConfig { return ToleranceConfig{caddy.Duration(tol)} }

// timestamped is the TimestampedConfig of secrets with tolerance tol.
func timestamped(tol time.Duration, secrets ...string) TimestampedConfig {
	return TimestampedConfig{keyed(secrets...), tolerance(tol)}
}

// verifyCase is one request of a scheme's own table (its official vectors
// and quirks): the scheme's config, the request's header name/value pairs
// and body, the clock (zero: conformanceNow) and the error Verify returns.
type verifyCase[T any] struct {
	name    string
	cfg     T
	headers []string
	body    string
	now     time.Time
	want    error
}

// runVerifyCases runs cases, each request built from its headers by
// request (newRequest, or the scheme's own); no error may contain one of
// secrets.
func runVerifyCases[T any, P interface {
	*T
	caddy.Provisioner
	Verifier
}](t *testing.T, request func(headers ...string) *http.Request, cases []verifyCase[T], secrets ...string) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			now := tc.now
			if now.IsZero() {
				now = conformanceNow
			}
			err := provision[T, P](t, tc.cfg).Verify(request(tc.headers...), []byte(tc.body), now)
			checkErr(t, err, tc.want, secrets...)
		})
	}
}

// mustB64 decodes standard base64.
func mustB64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// mustHex decodes hex.
func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

// provisionCase is one configuration of a scheme's own provisioning
// table: wantErr is "" for one that provisions, otherwise a part of the
// error it gives.
type provisionCase[T any] struct {
	name    string
	cfg     T
	wantErr string
}

// runProvisionCases provisions each case's config. One that fails must
// fail with its wantErr, in an error that repeats none of secrets nor any
// secret or key of the config longer than 6 characters; one that
// provisions must leave its JSON form as it was, and is then checked by
// ok.
func runProvisionCases[T any, P interface {
	*T
	caddy.Provisioner
}](t *testing.T, cases []provisionCase[T], ok func(*testing.T, P), secrets ...string) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, err := json.Marshal(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			v := tc.cfg
			err = P(&v).Provision(testContext(t))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				var cfg struct {
					Secrets    []string `json:"secrets"`
					PublicKeys []string `json:"public_keys"`
				}
				_ = json.Unmarshal(before, &cfg)
				leaks := append([]string(nil), secrets...)
				for _, s := range append(cfg.Secrets, cfg.PublicKeys...) {
					if s = strings.TrimSpace(s); len(s) > 6 {
						leaks = append(leaks, s)
					}
				}
				checkErr(t, err, err, leaks...)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if after, _ := json.Marshal(v); string(after) != string(before) {
				t.Fatalf("Provision changed the configuration: %s, was %s", after, before)
			}
			ok(t, &v)
		})
	}
}
