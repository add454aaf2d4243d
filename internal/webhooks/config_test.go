package webhooks

import (
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
)

// TestConfigDurationsAcceptCaddyStrings: every duration of the app's JSON
// config takes a Caddy duration string as well as nanoseconds, and both
// provision to the same values.
func TestConfigDurationsAcceptCaddyStrings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		config  string // %s for the duration
		ns, str string
		get     func(a *App) caddy.Duration
		want    time.Duration
	}{
		{name: "lease", config: `{"lease":%s}`, ns: "90000000000", str: `"1m30s"`,
			get: func(a *App) caddy.Duration { return a.Lease }, want: 90 * time.Second},
		{name: "retention", config: `{"retention":%s}`, ns: "172800000000000", str: `"2d"`,
			get: func(a *App) caddy.Duration { return a.Retention }, want: 48 * time.Hour},
		{name: "dlq_retention", config: `{"dlq_retention":%s}`, ns: "1209600000000000", str: `"14d"`,
			get: func(a *App) caddy.Duration { return a.DLQRetention }, want: 14 * 24 * time.Hour},
		{name: "alert signature_window", config: `{"alert":{"url":"http://127.0.0.1:1/a","signature_failures":5,"signature_window":%s}}`,
			ns: "600000000000", str: `"10m"`,
			get: func(a *App) caddy.Duration { return a.alerter.cfg.SignatureWindow }, want: 10 * time.Minute},
		{name: "alert min_interval", config: `{"alert":{"url":"http://127.0.0.1:1/a","dlq_threshold":1,"min_interval":%s}}`,
			ns: "3600000000000", str: `"1h"`,
			get: func(a *App) caddy.Duration { return a.alerter.cfg.MinInterval }, want: time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range []string{tc.ns, tc.str} {
				app, err := provisionApp(t, strings.Replace(tc.config, "%s", v, 1))
				if err != nil {
					t.Fatalf("%s: %v", v, err)
				}
				if got := time.Duration(tc.get(app)); got != tc.want {
					t.Errorf("%s: got %v, want %v", v, got, tc.want)
				}
			}
		})
	}
}
