package webhooks

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/hookline/hookline/internal/testing/caddyfiletest"
)

// webhooksBlock wraps option lines in a webhooks global option block.
func webhooksBlock(lines ...string) string {
	return "webhooks {\n\t" + strings.Join(lines, "\n\t") + "\n}"
}

func TestAppUnmarshalCaddyfile(t *testing.T) {
	tests := []struct {
		name  string
		input string
		// want is compared with reflect.DeepEqual, StorageRaw aside.
		want *App
		// wantStorage is the expected StorageRaw JSON ("" means none).
		wantStorage string
		// wantErr is a substring of the expected error ("" means success).
		wantErr string
	}{
		{name: "bare", input: "webhooks", want: &App{}},
		{name: "empty block", input: "webhooks {\n}", want: &App{}},
		{name: "args after webhooks", input: "webhooks embedded", wantErr: "wrong argument count"},
		{name: "args after webhooks with block", input: "webhooks x {\n\tworkers 2\n}", wantErr: "wrong argument count"},

		// storage
		{name: "storage embedded", input: webhooksBlock("storage embedded"), want: &App{}, wantStorage: `{"module":"embedded"}`},
		{
			name:        "storage embedded with path",
			input:       webhooksBlock("storage embedded /var/lib/hookline/events.db"),
			want:        &App{},
			wantStorage: `{"module":"embedded","path":"/var/lib/hookline/events.db"}`,
		},
		{
			name:        "storage embedded with placeholder path",
			input:       webhooksBlock("storage embedded {env.HOOKLINE_DB}", "workers 2"),
			want:        &App{Workers: 2},
			wantStorage: `{"module":"embedded","path":"{env.HOOKLINE_DB}"}`,
		},
		{name: "storage embedded two paths", input: webhooksBlock("storage embedded /a /b"), wantErr: "wrong argument count"},
		{name: "storage embedded with an unknown option", input: webhooksBlock("storage embedded {", "\tpath /a", "}"), wantErr: `unrecognized storage embedded option "path"`},
		{
			name:        "storage embedded with cache_size",
			input:       webhooksBlock("storage embedded /data/events.db {", "\tcache_size 16MiB", "}", "workers 2"),
			want:        &App{Workers: 2},
			wantStorage: `{"cache_size":16777216,"module":"embedded","path":"/data/events.db"}`,
		},
		{name: "storage without backend", input: webhooksBlock("storage"), wantErr: "wrong argument count"},
		{name: "storage unknown backend", input: webhooksBlock("storage nosuch"), wantErr: "webhooks.storage.nosuch"},

		// workers
		{name: "workers", input: webhooksBlock("workers 16"), want: &App{Workers: 16}},
		{name: "workers zero", input: webhooksBlock("workers 0"), wantErr: `workers: want a positive integer, got "0"`},
		{name: "workers negative", input: webhooksBlock("workers -4"), wantErr: "workers: want a positive integer"},
		{name: "workers garbage", input: webhooksBlock("workers many"), wantErr: "workers: want a positive integer"},
		{name: "workers no arg", input: webhooksBlock("workers"), wantErr: "wrong argument count"},
		{name: "workers two args", input: webhooksBlock("workers 1 2"), wantErr: "wrong argument count"},

		// durations
		{name: "lease", input: webhooksBlock("lease 1m"), want: &App{Lease: caddy.Duration(time.Minute)}},
		{name: "lease garbage", input: webhooksBlock("lease soon"), wantErr: `lease: invalid duration "soon"`},
		{name: "lease negative", input: webhooksBlock("lease -1m"), wantErr: "lease: invalid duration"},
		{name: "lease no arg", input: webhooksBlock("lease"), wantErr: "wrong argument count"},
		{name: "retention", input: webhooksBlock("retention 24h"), want: &App{Retention: caddy.Duration(24 * time.Hour)}},
		{name: "retention in days", input: webhooksBlock("retention 3d"), want: &App{Retention: caddy.Duration(72 * time.Hour)}},
		{name: "retention bare number", input: webhooksBlock("retention 24"), wantErr: `retention: invalid duration "24"`},
		{name: "retention two args", input: webhooksBlock("retention 1h 2h"), wantErr: "wrong argument count"},
		{name: "dlq_retention", input: webhooksBlock("dlq_retention 168h"), want: &App{DLQRetention: caddy.Duration(168 * time.Hour)}},
		{name: "dlq_retention 0 keeps forever", input: webhooksBlock("dlq_retention 0"), want: &App{DLQRetention: -1}},
		{name: "dlq_retention 0s keeps forever", input: webhooksBlock("dlq_retention 0s"), want: &App{DLQRetention: -1}},
		{name: "dlq_retention negative", input: webhooksBlock("dlq_retention -1h"), wantErr: "dlq_retention: invalid duration"},
		{name: "dlq_retention garbage", input: webhooksBlock("dlq_retention never"), wantErr: `dlq_retention: invalid duration "never"`},

		// encryption at rest: the keys as written (placeholders kept)
		{name: "encryption_key", input: webhooksBlock("encryption_key {env.HOOKLINE_KEY}"), want: &App{EncryptionKeys: []string{"{env.HOOKLINE_KEY}"}}},
		{name: "audit", input: webhooksBlock("audit"), want: &App{Audit: true}},
		{name: "audit with an argument", input: webhooksBlock("audit on"), wantErr: "wrong argument count"},
		{name: "encryption_key with older keys", input: webhooksBlock("encryption_key {env.NEW} {file./run/secrets/old}"),
			want: &App{EncryptionKeys: []string{"{env.NEW}", "{file./run/secrets/old}"}}},
		{name: "encryption_key no key", input: webhooksBlock("encryption_key"), wantErr: "encryption_key needs a key"},

		// alerts
		{name: "alert block", input: webhooksBlock("alert {env.SLACK_URL} {", "\tdlq_threshold 3", "\terror_rate 0.5 40", "\tsignature_failures 5 2m", "\tmin_interval 10m", "}"),
			want: &App{Alert: &AlertConfig{URL: "{env.SLACK_URL}", DLQThreshold: 3, ErrorRate: 0.5, ErrorMinAttempts: 40,
				SignatureFailures: 5, SignatureWindow: caddy.Duration(2 * time.Minute), MinInterval: caddy.Duration(10 * time.Minute)}}},
		{name: "alert defaults", input: webhooksBlock("alert https://hooks.slack.com/x"),
			want: &App{Alert: &AlertConfig{URL: "https://hooks.slack.com/x", DLQThreshold: 1, SignatureFailures: 10, SignatureWindow: caddy.Duration(time.Minute)}}},
		{name: "alert no url", input: webhooksBlock("alert"), wantErr: "alert needs a URL"},
		{name: "alert bad rate", input: webhooksBlock("alert https://x {", "\terror_rate 2", "}"), wantErr: "error_rate"},
		{name: "alert bad window", input: webhooksBlock("alert https://x {", "\tsignature_failures 5", "}"), wantErr: "signature_failures"},
		{name: "alert unknown", input: webhooksBlock("alert https://x {", "\tchannel ops", "}"), wantErr: `unrecognized alert option "channel"`},

		// unknown option
		{name: "unknown option", input: webhooksBlock("threads 4"), wantErr: `unrecognized webhooks option "threads"`},

		// all together
		{
			name: "every option",
			input: webhooksBlock(
				"storage embedded /data/events.db",
				"workers 32",
				"lease 2m",
				"retention 48h",
				"dlq_retention 0",
			),
			want: &App{
				Workers:      32,
				Lease:        caddy.Duration(2 * time.Minute),
				Retention:    caddy.Duration(48 * time.Hour),
				DLQRetention: -1,
			},
			wantStorage: `{"module":"embedded","path":"/data/events.db"}`,
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := caddyfiletest.Parse[App](t, tt.input, tt.wantErr)
			if got == nil {
				return
			}
			caddyfiletest.CheckRaw(t, "StorageRaw", got.StorageRaw, tt.wantStorage)

			got.StorageRaw = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestParseGlobalOption checks the httpcaddyfile glue: the app value, its
// JSON, and that the option may appear only once.
func TestParseGlobalOption(t *testing.T) {
	val, err := parseGlobalOption(caddyfile.NewTestDispenser(webhooksBlock("workers 4", "dlq_retention 0")), nil)
	if err != nil {
		t.Fatal(err)
	}
	app, ok := val.(httpcaddyfile.App)
	if !ok {
		t.Fatalf("value is %T, want httpcaddyfile.App", val)
	}
	if app.Name != "webhooks" {
		t.Errorf("app name = %q, want webhooks", app.Name)
	}
	if want := `{"workers":4,"dlq_retention":-1}`; !caddyfiletest.JSONEqual(t, app.Value, []byte(want)) {
		t.Errorf("app JSON = %s, want %s", app.Value, want)
	}

	_, err = parseGlobalOption(caddyfile.NewTestDispenser("webhooks"), val)
	if err == nil || !strings.Contains(err.Error(), "may appear only once, at Testfile:1") {
		t.Fatalf("second webhooks option: err = %v, want \"may appear only once, at Testfile:1\"", err)
	}

	_, err = parseGlobalOption(caddyfile.NewTestDispenser(webhooksBlock("workers none")), nil)
	if err == nil || !strings.Contains(err.Error(), "workers") {
		t.Fatalf("bad option: err = %v", err)
	}
}

// jsonEqual reports whether a and b hold the same JSON value.
