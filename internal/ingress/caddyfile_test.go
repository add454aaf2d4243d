package ingress

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/hookline/hookline/internal/testing/caddyfiletest"
)

// ingressBlock wraps option lines in a webhook_ingress block for source "src".
func ingressBlock(lines ...string) string {
	return "webhook_ingress src {\n\t" + strings.Join(lines, "\n\t") + "\n}"
}

func fptr(f float64) *float64 { return &f }

func dur(d time.Duration) caddy.Duration { return caddy.Duration(d) }

// jsonEqual reports whether a and b hold the same JSON value.

func TestIngressUnmarshalCaddyfile(t *testing.T) {
	tests := []struct {
		name  string
		input string
		// want is compared with reflect.DeepEqual, VerifyRaw aside.
		want *Ingress
		// wantVerify is the expected VerifyRaw JSON ("" means none).
		wantVerify string
		// wantErr is a substring of the expected error ("" means success).
		wantErr string
	}{
		// source name
		{name: "source only", input: "webhook_ingress stripe", want: &Ingress{Source: "stripe"}},
		{name: "source with empty block", input: "webhook_ingress stripe {\n}", want: &Ingress{Source: "stripe"}},
		{name: "no source", input: "webhook_ingress", wantErr: "needs a source name"},
		{name: "no source with block", input: "webhook_ingress {\n\trequire_json\n}", wantErr: "needs a source name"},
		{name: "two source names", input: "webhook_ingress a b", wantErr: "wrong argument count"},

		// verify
		{
			name:       "verify hmac with secrets as args",
			input:      ingressBlock("verify hmac s1 {env.HOOK_SECRET}"),
			want:       &Ingress{Source: "src"},
			wantVerify: `{"scheme":"hmac","secrets":["s1","{env.HOOK_SECRET}"]}`,
		},
		{
			name: "verify hmac with every block option",
			input: ingressBlock(
				"verify hmac s1 {",
				"\tsecret s2 {file./run/secrets/hook}",
				"\tsecret s3",
				"\theader X-Sig",
				"\talgorithm sha512",
				"\tencoding base64",
				"\tprefix v1=",
				"\ttimestamp_header X-Ts",
				"\tid_header X-Id",
				"\tsigned_content {id}.{timestamp}.{body}",
				"\ttolerance 2m",
				"}",
				"forward_to http://127.0.0.1:9000/hook",
			),
			want: &Ingress{Source: "src", ForwardTo: "http://127.0.0.1:9000/hook"},
			wantVerify: `{"scheme":"hmac","secrets":["s1","s2","{file./run/secrets/hook}","s3"],
				"header":"X-Sig","algorithm":"sha512","encoding":"base64","prefix":"v1=",
				"timestamp_header":"X-Ts","id_header":"X-Id",
				"signed_content":"{id}.{timestamp}.{body}","tolerance":120000000000}`,
		},
		{
			name:       "verify hmac block only",
			input:      ingressBlock("verify hmac {", "\tsecret s1", "}", "require_json"),
			want:       &Ingress{Source: "src", RequireJSON: true},
			wantVerify: `{"scheme":"hmac","secrets":["s1"]}`,
		},
		{name: "verify hmac bad algorithm", input: ingressBlock("verify hmac s {", "\talgorithm sha3-256", "}"), wantErr: "unknown algorithm"},
		{name: "verify hmac bad encoding", input: ingressBlock("verify hmac s {", "\tencoding hexa", "}"), wantErr: "unknown encoding"},
		{name: "verify hmac bad template", input: ingressBlock("verify hmac s {", "\tsigned_content {nope}", "}"), wantErr: "unknown placeholder"},
		{name: "verify hmac bad tolerance", input: ingressBlock("verify hmac s {", "\ttolerance soon", "}"), wantErr: "bad tolerance"},
		{name: "verify hmac negative tolerance", input: ingressBlock("verify hmac s {", "\ttolerance -1m", "}"), wantErr: "must not be negative"},
		{name: "verify hmac secret without value", input: ingressBlock("verify hmac {", "\tsecret", "}"), wantErr: "wrong argument count"},
		{name: "verify hmac header two values", input: ingressBlock("verify hmac s {", "\theader A B", "}"), wantErr: "wrong argument count"},
		{name: "verify hmac unknown option", input: ingressBlock("verify hmac s {", "\tdigest sha256", "}"), wantErr: `unrecognized hmac option "digest"`},
		{
			name:       "verify github with several secrets",
			input:      ingressBlock("verify github {env.GH_NEW} {env.GH_OLD} {", "\tsecret third", "\tallow_sha1", "}"),
			want:       &Ingress{Source: "src"},
			wantVerify: `{"scheme":"github","secrets":["{env.GH_NEW}","{env.GH_OLD}","third"],"allow_sha1":true}`,
		},
		{
			name:       "verify github without secrets parses",
			input:      ingressBlock("verify github"),
			want:       &Ingress{Source: "src"},
			wantVerify: `{"scheme":"github"}`,
		},
		{name: "verify github allow_sha1 with arg", input: ingressBlock("verify github s {", "\tallow_sha1 yes", "}"), wantErr: "wrong argument count"},
		{name: "verify github unknown option", input: ingressBlock("verify github s {", "\ttolerance 5m", "}"), wantErr: `unrecognized github option "tolerance"`},
		{
			name:       "verify none",
			input:      ingressBlock("verify none", "forward_to http://up/"),
			want:       &Ingress{Source: "src", ForwardTo: "http://up/"},
			wantVerify: `{"scheme":"none"}`,
		},
		{name: "verify none with arg", input: ingressBlock("verify none secret"), wantErr: "wrong argument count"},
		{name: "verify none with block", input: ingressBlock("verify none {", "\theader X", "}"), wantErr: "takes no options"},
		{name: "verify unknown scheme", input: ingressBlock("verify nosuch s1"), wantErr: "webhooks.verifiers.nosuch"},
		{name: "verify without scheme", input: ingressBlock("verify"), wantErr: "wrong argument count"},
		{name: "verify twice", input: ingressBlock("verify none", "verify github s"), wantErr: "verify may appear only once"},

		// forward_to
		{name: "forward_to", input: ingressBlock("forward_to https://app.internal/hooks?x=1"), want: &Ingress{Source: "src", ForwardTo: "https://app.internal/hooks?x=1"}},
		{name: "forward_to without url", input: ingressBlock("forward_to"), wantErr: "wrong argument count"},
		{name: "forward_to two urls", input: ingressBlock("forward_to http://a/ http://b/"), wantErr: "wrong argument count"},

		// id_from
		{name: "id_from header", input: ingressBlock("id_from header X-Event-Id"), want: &Ingress{Source: "src", IDFrom: []IDRule{{Kind: "header", Arg: "X-Event-Id"}}}},
		{name: "id_from json", input: ingressBlock("id_from json entry.0.messaging.0.message.mid"), want: &Ingress{Source: "src", IDFrom: []IDRule{{Kind: "json", Arg: "entry.0.messaging.0.message.mid"}}}},
		{name: "id_from form", input: ingressBlock("id_from form MessageSid"), want: &Ingress{Source: "src", IDFrom: []IDRule{{Kind: "form", Arg: "MessageSid"}}}},
		{name: "id_from body_hash", input: ingressBlock("id_from body_hash 5m"), want: &Ingress{Source: "src", IDFrom: []IDRule{{Kind: "body_hash", Window: dur(5 * time.Minute)}}}},
		{name: "id_from body_hash in days", input: ingressBlock("id_from body_hash 1d"), want: &Ingress{Source: "src", IDFrom: []IDRule{{Kind: "body_hash", Window: dur(24 * time.Hour)}}}},
		{
			name:  "id_from repeated keeps order",
			input: ingressBlock("id_from header I-Twilio-Idempotency-Token", "id_from form MessageSid", "id_from json data.id", "id_from body_hash 1h"),
			want: &Ingress{Source: "src", IDFrom: []IDRule{
				{Kind: "header", Arg: "I-Twilio-Idempotency-Token"},
				{Kind: "form", Arg: "MessageSid"},
				{Kind: "json", Arg: "data.id"},
				{Kind: "body_hash", Window: dur(time.Hour)},
			}},
		},
		{name: "id_from bad kind", input: ingressBlock("id_from cookie session"), wantErr: `unknown id_from kind "cookie"`},
		{name: "id_from no args", input: ingressBlock("id_from"), wantErr: "id_from wants a kind and an argument"},
		{name: "id_from one arg", input: ingressBlock("id_from header"), wantErr: "id_from wants a kind and an argument"},
		{name: "id_from three args", input: ingressBlock("id_from header X-A X-B"), wantErr: "id_from wants a kind and an argument"},
		{name: "id_from body_hash bad window", input: ingressBlock("id_from body_hash forever"), wantErr: "invalid window"},
		{name: "id_from body_hash zero window", input: ingressBlock("id_from body_hash 0s"), wantErr: "invalid window"},

		// dedupe_window and timeout
		{name: "dedupe_window", input: ingressBlock("dedupe_window 48h"), want: &Ingress{Source: "src", DedupeWindow: dur(48 * time.Hour)}},
		{name: "dedupe_window in days", input: ingressBlock("dedupe_window 2d"), want: &Ingress{Source: "src", DedupeWindow: dur(48 * time.Hour)}},
		{name: "dedupe_window zero", input: ingressBlock("dedupe_window 0s"), wantErr: `dedupe_window: invalid duration "0s"`},
		{name: "dedupe_window negative", input: ingressBlock("dedupe_window -1h"), wantErr: "dedupe_window: invalid duration"},
		{name: "dedupe_window garbage", input: ingressBlock("dedupe_window a-day"), wantErr: "dedupe_window: invalid duration"},
		{name: "dedupe_window no arg", input: ingressBlock("dedupe_window"), wantErr: "wrong argument count"},
		{name: "timeout", input: ingressBlock("timeout 10s"), want: &Ingress{Source: "src", DeliveryOptions: DeliveryOptions{Timeout: dur(10 * time.Second)}}},
		{name: "timeout compound", input: ingressBlock("timeout 1m30s"), want: &Ingress{Source: "src", DeliveryOptions: DeliveryOptions{Timeout: dur(90 * time.Second)}}},
		{name: "timeout bare number", input: ingressBlock("timeout 10"), wantErr: `timeout: invalid duration "10"`},
		{name: "timeout garbage", input: ingressBlock("timeout soon"), wantErr: "timeout: invalid duration"},
		{name: "timeout zero", input: ingressBlock("timeout 0s"), wantErr: "timeout: invalid duration"},
		{name: "timeout negative", input: ingressBlock("timeout -5s"), wantErr: "timeout: invalid duration"},
		{name: "timeout two args", input: ingressBlock("timeout 5s 10s"), wantErr: "wrong argument count"},

		// max_body
		{name: "max_body 1MB", input: ingressBlock("max_body 1MB"), want: &Ingress{Source: "src", MaxBody: 1000000}},
		{name: "max_body 512KiB", input: ingressBlock("max_body 512KiB"), want: &Ingress{Source: "src", MaxBody: 512 << 10}},
		{name: "max_body 2MiB", input: ingressBlock("max_body 2MiB"), want: &Ingress{Source: "src", MaxBody: 2 << 20}},
		{name: "max_body bytes", input: ingressBlock("max_body 4096"), want: &Ingress{Source: "src", MaxBody: 4096}},
		{name: "max_body garbage", input: ingressBlock("max_body lots"), wantErr: `max_body: invalid size "lots"`},
		{name: "max_body zero", input: ingressBlock("max_body 0"), wantErr: "max_body: invalid size"},
		{name: "max_body too large", input: ingressBlock("max_body 2TiB"), wantErr: "max_body: invalid size"},
		{name: "max_body no arg", input: ingressBlock("max_body"), wantErr: "wrong argument count"},

		// require_json
		{name: "require_json", input: ingressBlock("require_json"), want: &Ingress{Source: "src", RequireJSON: true}},
		{name: "require_json stray arg", input: ingressBlock("require_json yes"), wantErr: "wrong argument count"},

		// retry
		{
			name: "retry full backoff",
			input: ingressBlock(
				"retry {",
				"\tmax_attempts 5",
				"\tbackoff 1s 60s multiplier 2 jitter 0.2",
				"}",
			),
			want: &Ingress{Source: "src", DeliveryOptions: DeliveryOptions{Retry: &RetryConfig{
				MaxAttempts: 5, Initial: dur(time.Second), Max: dur(time.Minute), Multiplier: 2, Jitter: fptr(0.2),
			}}},
		},
		{
			name:  "retry backoff jitter 0 is a pointer to 0",
			input: ingressBlock("retry {", "\tbackoff 500ms 10s jitter 0", "}"),
			want: &Ingress{Source: "src", DeliveryOptions: DeliveryOptions{Retry: &RetryConfig{
				Initial: dur(500 * time.Millisecond), Max: dur(10 * time.Second), Jitter: fptr(0),
			}}},
		},
		{
			name:  "retry backoff options in any order",
			input: ingressBlock("retry {", "\tbackoff 1s 1m jitter 0.5 multiplier 3", "}"),
			want: &Ingress{Source: "src", DeliveryOptions: DeliveryOptions{Retry: &RetryConfig{
				Initial: dur(time.Second), Max: dur(time.Minute), Multiplier: 3, Jitter: fptr(0.5),
			}}},
		},
		{
			name:  "retry backoff without options",
			input: ingressBlock("retry {", "\tbackoff 2s 2s", "}"),
			want:  &Ingress{Source: "src", DeliveryOptions: DeliveryOptions{Retry: &RetryConfig{Initial: dur(2 * time.Second), Max: dur(2 * time.Second)}}},
		},
		{
			name:  "retry schedule",
			input: ingressBlock("retry {", "\tmax_attempts 6", "\tschedule 1m 5m 30m 2h 12h", "}"),
			want: &Ingress{Source: "src", DeliveryOptions: DeliveryOptions{Retry: &RetryConfig{
				MaxAttempts: 6,
				Schedule: []caddy.Duration{
					dur(time.Minute), dur(5 * time.Minute), dur(30 * time.Minute), dur(2 * time.Hour), dur(12 * time.Hour),
				},
			}}},
		},
		{
			name:  "retry without block",
			input: ingressBlock("retry", "require_json"),
			want:  &Ingress{Source: "src", DeliveryOptions: DeliveryOptions{Retry: &RetryConfig{}}, RequireJSON: true},
		},
		{
			name:  "retry then more options",
			input: ingressBlock("retry {", "\tmax_attempts 1", "}", "ack_status 200"),
			want:  &Ingress{Source: "src", DeliveryOptions: DeliveryOptions{Retry: &RetryConfig{MaxAttempts: 1}}, AckStatus: 200},
		},
		{name: "retry with arg", input: ingressBlock("retry 5"), wantErr: "wrong argument count"},
		{name: "retry bad multiplier", input: ingressBlock("retry {", "\tbackoff 1s 1m multiplier 0.5", "}"), wantErr: "multiplier must be >= 1"},
		{name: "retry multiplier not a number", input: ingressBlock("retry {", "\tbackoff 1s 1m multiplier two", "}"), wantErr: `backoff multiplier: invalid number "two"`},
		{name: "retry jitter one", input: ingressBlock("retry {", "\tbackoff 1s 1m jitter 1", "}"), wantErr: "jitter must be in [0, 1)"},
		{name: "retry jitter negative", input: ingressBlock("retry {", "\tbackoff 1s 1m jitter -0.1", "}"), wantErr: "jitter must be in [0, 1)"},
		{name: "retry backoff odd arg count", input: ingressBlock("retry {", "\tbackoff 1s 1m multiplier", "}"), wantErr: "backoff <initial> <max>"},
		{name: "retry backoff one arg", input: ingressBlock("retry {", "\tbackoff 1s", "}"), wantErr: "backoff <initial> <max>"},
		{name: "retry backoff unknown option", input: ingressBlock("retry {", "\tbackoff 1s 1m factor 2", "}"), wantErr: `backoff: unknown option "factor"`},
		{name: "retry backoff max below initial", input: ingressBlock("retry {", "\tbackoff 1m 1s", "}"), wantErr: "want 0 < initial <= max"},
		{name: "retry backoff zero initial", input: ingressBlock("retry {", "\tbackoff 0s 1s", "}"), wantErr: "want 0 < initial <= max"},
		{name: "retry backoff bad duration", input: ingressBlock("retry {", "\tbackoff fast 1s", "}"), wantErr: "want 0 < initial <= max"},
		{name: "retry max_attempts zero", input: ingressBlock("retry {", "\tmax_attempts 0", "}"), wantErr: "max_attempts: want a positive integer"},
		{name: "retry max_attempts garbage", input: ingressBlock("retry {", "\tmax_attempts many", "}"), wantErr: "max_attempts: want a positive integer"},
		{name: "retry max_attempts no arg", input: ingressBlock("retry {", "\tmax_attempts", "}"), wantErr: "wrong argument count"},
		{name: "retry schedule empty", input: ingressBlock("retry {", "\tschedule", "}"), wantErr: "wrong argument count"},
		{name: "retry schedule zero delay", input: ingressBlock("retry {", "\tschedule 1m 0s", "}"), wantErr: `schedule: invalid delay "0s"`},
		{name: "retry schedule garbage", input: ingressBlock("retry {", "\tschedule 1m later", "}"), wantErr: `schedule: invalid delay "later"`},
		{name: "retry unknown option", input: ingressBlock("retry {", "\tattempts 3", "}"), wantErr: `unrecognized retry option "attempts"`},

		// rate_limit
		{name: "rate_limit per second", input: ingressBlock("rate_limit 50/s"), want: &Ingress{Source: "src", DeliveryOptions: DeliveryOptions{RateLimit: &RateLimit{Events: 50, Interval: dur(time.Second)}}}},
		{name: "rate_limit per minute", input: ingressBlock("rate_limit 10/m"), want: &Ingress{Source: "src", DeliveryOptions: DeliveryOptions{RateLimit: &RateLimit{Events: 10, Interval: dur(time.Minute)}}}},
		{name: "rate_limit per hour", input: ingressBlock("rate_limit 1000/h"), want: &Ingress{Source: "src", DeliveryOptions: DeliveryOptions{RateLimit: &RateLimit{Events: 1000, Interval: dur(time.Hour)}}}},
		{name: "rate_limit per duration", input: ingressBlock("rate_limit 5/30s"), want: &Ingress{Source: "src", DeliveryOptions: DeliveryOptions{RateLimit: &RateLimit{Events: 5, Interval: dur(30 * time.Second)}}}},
		{name: "rate_limit no slash", input: ingressBlock("rate_limit 50"), wantErr: "rate_limit: want <n>/<s|m|h>"},
		{name: "rate_limit zero count", input: ingressBlock("rate_limit 0/s"), wantErr: `rate_limit: invalid count "0"`},
		{name: "rate_limit negative count", input: ingressBlock("rate_limit -1/s"), wantErr: "rate_limit: invalid count"},
		{name: "rate_limit count garbage", input: ingressBlock("rate_limit many/s"), wantErr: "rate_limit: invalid count"},
		{name: "rate_limit empty interval", input: ingressBlock("rate_limit 10/"), wantErr: `rate_limit: invalid interval ""`},
		{name: "rate_limit unknown unit", input: ingressBlock("rate_limit 10/week"), wantErr: `rate_limit: invalid interval "week"`},
		{name: "rate_limit zero interval", input: ingressBlock("rate_limit 10/0s"), wantErr: "rate_limit: invalid interval"},
		{name: "rate_limit no arg", input: ingressBlock("rate_limit"), wantErr: "wrong argument count"},
		{name: "rate_limit two args", input: ingressBlock("rate_limit 10 /s"), wantErr: "wrong argument count"},

		// ack_status
		{name: "ack_status 200", input: ingressBlock("ack_status 200"), want: &Ingress{Source: "src", AckStatus: 200}},
		{name: "ack_status 202", input: ingressBlock("ack_status 202"), want: &Ingress{Source: "src", AckStatus: 202}},
		{name: "ack_status 204", input: ingressBlock("ack_status 204"), want: &Ingress{Source: "src", AckStatus: 204}},
		{name: "ack_status 201", input: ingressBlock("ack_status 201"), wantErr: "ack_status must be 200, 202 or 204"},
		{name: "ack_status garbage", input: ingressBlock("ack_status ok"), wantErr: "ack_status must be 200, 202 or 204"},
		{name: "ack_status no arg", input: ingressBlock("ack_status"), wantErr: "wrong argument count"},

		// sign_forwarded and type_from
		{name: "sign_forwarded", input: ingressBlock("sign_forwarded {env.UPSTREAM_SECRET} {env.OLD}"), want: &Ingress{Source: "src", DeliveryOptions: DeliveryOptions{SignForwarded: []string{"{env.UPSTREAM_SECRET}", "{env.OLD}"}}}},
		{name: "sign_forwarded twice adds", input: ingressBlock("sign_forwarded a", "sign_forwarded b"), want: &Ingress{Source: "src", DeliveryOptions: DeliveryOptions{SignForwarded: []string{"a", "b"}}}},
		{name: "sign_forwarded no secret", input: ingressBlock("sign_forwarded"), wantErr: "sign_forwarded wants one or more Standard Webhooks secrets"},
		{name: "type_from", input: ingressBlock("type_from header X-Event", "type_from json kind"), want: &Ingress{Source: "src", TypeFrom: []TypeRule{{IDRule: IDRule{Kind: "header", Arg: "X-Event"}}, {IDRule: IDRule{Kind: "json", Arg: "kind"}}}}},
		{name: "type_from one word", input: ingressBlock("type_from json"), wantErr: "type_from wants a kind and an argument"},
		{name: "type_from raw_hash", input: ingressBlock("type_from raw_hash x"), wantErr: "type_from takes header, json or form"},
		{name: "tenant_from", input: ingressBlock("tenant_from header X-Shopify-Shop-Domain", "tenant_from json installation.id"),
			want: &Ingress{Source: "src", TenantFrom: []IDRule{{Kind: "header", Arg: "X-Shopify-Shop-Domain"}, {Kind: "json", Arg: "installation.id"}}}},
		{name: "tenant_from one word", input: ingressBlock("tenant_from json"), wantErr: "tenant_from wants a kind and an argument"},
		{name: "tenant_from body_hash", input: ingressBlock("tenant_from body_hash 5m"), wantErr: "tenant_from takes header, json or form"},
		{name: "tenant_from raw_hash", input: ingressBlock("tenant_from raw_hash X-A"), wantErr: "tenant_from takes header, json or form"},

		// ordered
		{name: "ordered", input: ingressBlock("ordered json data.object.customer"),
			want: &Ingress{Source: "src", DeliveryOptions: DeliveryOptions{Ordered: &OrderedConfig{Kind: "json", Arg: "data.object.customer"}}}},
		{name: "ordered on_dead skip", input: ingressBlock("ordered header X-Key {", "on_dead skip", "}"),
			want: &Ingress{Source: "src", DeliveryOptions: DeliveryOptions{Ordered: &OrderedConfig{Kind: "header", Arg: "X-Key", OnDead: "skip"}}}},
		{name: "ordered in a destination", input: ingressBlock("destination billing http://127.0.0.1:9100/ {", "ordered form AccountSid {", "on_dead block", "}", "}"),
			want: &Ingress{Source: "src", Destinations: []Destination{{Name: "billing", URL: "http://127.0.0.1:9100/",
				DeliveryOptions: DeliveryOptions{Ordered: &OrderedConfig{Kind: "form", Arg: "AccountSid", OnDead: "block"}}}}}},
		{name: "ordered one word", input: ingressBlock("ordered json"), wantErr: "ordered wants a kind and an argument"},
		{name: "ordered body_hash", input: ingressBlock("ordered body_hash 1m"), wantErr: `ordered: the key is found by header, json or form, got "body_hash"`},
		{name: "ordered on_dead other", input: ingressBlock("ordered json k {", "on_dead retry", "}"), wantErr: `on_dead must be block or skip, got "retry"`},
		{name: "ordered unknown option", input: ingressBlock("ordered json k {", "window 1m", "}"), wantErr: `unrecognized ordered option "window"`},

		// TLS options of the upstream
		{name: "tls options", input: ingressBlock("tls_trusted_ca_certs /ca1.pem {env.CA2}", "tls_trusted_ca_certs /ca3.pem", "tls_client_auth /c.pem /c.key", "tls_server_name app.internal", "tls_insecure_skip_verify"),
			want: &Ingress{Source: "src", DeliveryOptions: DeliveryOptions{TLS: &UpstreamTLS{RootCAPEMFiles: []string{"/ca1.pem", "{env.CA2}", "/ca3.pem"},
				ClientCertificateFile: "/c.pem", ClientCertificateKeyFile: "/c.key", ServerName: "app.internal", InsecureSkipVerify: true}}}},
		{name: "tls options in a destination", input: ingressBlock("destination billing https://127.0.0.1:9100/ {", "tls_server_name billing.internal", "}"),
			want: &Ingress{Source: "src", Destinations: []Destination{{Name: "billing", URL: "https://127.0.0.1:9100/",
				DeliveryOptions: DeliveryOptions{TLS: &UpstreamTLS{ServerName: "billing.internal"}}}}}},
		{name: "tls_trusted_ca_certs empty", input: ingressBlock("tls_trusted_ca_certs"), wantErr: "tls_trusted_ca_certs wants one or more PEM files"},
		{name: "tls_client_auth one file", input: ingressBlock("tls_client_auth /c.pem"), wantErr: "tls_client_auth wants a certificate file and a key file"},
		{name: "tls_server_name two", input: ingressBlock("tls_server_name a b"), wantErr: "wrong argument count"},
		{name: "tls_insecure_skip_verify arg", input: ingressBlock("tls_insecure_skip_verify yes"), wantErr: "wrong argument count"},

		// edge protection
		{name: "allow_ips", input: ingressBlock("allow_ips 3.18.12.63/32 3.130.192.0/26", "allow_ips {env.STRIPE_IPS}"),
			want: &Ingress{Source: "src", AllowIPs: []string{"3.18.12.63/32", "3.130.192.0/26", "{env.STRIPE_IPS}"}}},
		{name: "allow_ips empty", input: ingressBlock("allow_ips"), wantErr: "allow_ips wants one or more IPs or CIDR ranges"},
		{name: "accept_rate", input: ingressBlock("accept_rate 1000/m"), want: &Ingress{Source: "src", AcceptRate: &RateLimit{Events: 1000, Interval: dur(time.Minute)}}},
		{name: "accept_rate bad", input: ingressBlock("accept_rate fast"), wantErr: "accept_rate: want <n>/<s|m|h>"},
		{name: "schema", input: ingressBlock("schema /etc/caddy/schemas/order.json"), want: &Ingress{Source: "src", Schema: "/etc/caddy/schemas/order.json"}},
		{name: "schema two files", input: ingressBlock("schema a.json b.json"), wantErr: "wrong argument count"},

		// destinations
		{name: "destination without block", input: ingressBlock("destination billing http://127.0.0.1:9100/"),
			want: &Ingress{Source: "src", Destinations: []Destination{{Name: "billing", URL: "http://127.0.0.1:9100/"}}}},
		{
			name: "destination with filters and options",
			input: ingressBlock(
				"forward_to http://127.0.0.1:9000/",
				"timeout 5s",
				"destination billing http://127.0.0.1:9100/hooks {",
				"	events invoice.* customer.subscription.*",
				"	events charge.refunded",
				"	when json data.object.livemode true",
				"	when header Stripe-Account acct_1",
				"	timeout 3s",
				"	retry {",
				"		max_attempts 8",
				"	}",
				"	rate_limit 5/s",
				"	sign_forwarded {env.BILLING_SECRET}",
				"}",
				"destination audit http://127.0.0.1:9200/",
			),
			want: &Ingress{Source: "src", ForwardTo: "http://127.0.0.1:9000/", DeliveryOptions: DeliveryOptions{Timeout: dur(5 * time.Second)},
				Destinations: []Destination{{
					Name: "billing", URL: "http://127.0.0.1:9100/hooks",
					Events: []string{"invoice.*", "customer.subscription.*", "charge.refunded"},
					When:   []Condition{{Kind: "json", Path: "data.object.livemode", Value: "true"}, {Kind: "header", Path: "Stripe-Account", Value: "acct_1"}},
					DeliveryOptions: DeliveryOptions{Timeout: dur(3 * time.Second), Retry: &RetryConfig{MaxAttempts: 8},
						RateLimit: &RateLimit{Events: 5, Interval: dur(time.Second)}, SignForwarded: []string{"{env.BILLING_SECRET}"}},
				}, {Name: "audit", URL: "http://127.0.0.1:9200/"}},
			},
		},
		{name: "destination without URL", input: ingressBlock("destination billing"), wantErr: "destination wants a name and a URL"},
		{name: "destination bad name", input: ingressBlock("destination bill/ing http://x/"), wantErr: `destination name "bill/ing": only letters`},
		{name: "destination events empty", input: ingressBlock("destination b http://x/ {", "events", "}"), wantErr: "events wants one or more globs"},
		{name: "destination when short", input: ingressBlock("destination b http://x/ {", "when json livemode", "}"), wantErr: "when wants a kind, a path and a value"},
		{name: "destination when kind", input: ingressBlock("destination b http://x/ {", "when body x y", "}"), wantErr: `when: kind must be json, header or form, got "body"`},
		{name: "destination unknown option", input: ingressBlock("destination b http://x/ {", "ack_status 200", "}"), wantErr: `unrecognized destination option "ack_status"`},
		{name: "destination bad rate", input: ingressBlock("destination b http://x/ {", "rate_limit 0/s", "}"), wantErr: "rate_limit: invalid count"},

		// unknown option
		{name: "unknown option", input: ingressBlock("upstream http://x/"), wantErr: `unrecognized webhook_ingress option "upstream"`},

		// everything at once
		{
			name: "every option",
			input: ingressBlock(
				"verify hmac {env.S1} {",
				"\theader X-Hook-Signature",
				"\tprefix sha256=",
				"}",
				"forward_to http://127.0.0.1:9000/webhooks/src",
				"id_from json id",
				"id_from header X-Request-Id",
				"dedupe_window 12h",
				"max_body 256KiB",
				"require_json",
				"timeout 5s",
				"retry {",
				"\tmax_attempts 4",
				"\tbackoff 2s 30s multiplier 1.5 jitter 0",
				"\tschedule 10s 1m 10m",
				"}",
				"rate_limit 20/s",
				"ack_status 200",
			),
			want: &Ingress{
				Source:       "src",
				ForwardTo:    "http://127.0.0.1:9000/webhooks/src",
				IDFrom:       []IDRule{{Kind: "json", Arg: "id"}, {Kind: "header", Arg: "X-Request-Id"}},
				DedupeWindow: dur(12 * time.Hour),
				MaxBody:      256 << 10,
				RequireJSON:  true,
				DeliveryOptions: DeliveryOptions{
					Timeout: dur(5 * time.Second),
					Retry: &RetryConfig{
						MaxAttempts: 4, Initial: dur(2 * time.Second), Max: dur(30 * time.Second),
						Multiplier: 1.5, Jitter: fptr(0),
						Schedule: []caddy.Duration{dur(10 * time.Second), dur(time.Minute), dur(10 * time.Minute)},
					},
					RateLimit: &RateLimit{Events: 20, Interval: dur(time.Second)},
				},
				AckStatus: 200,
			},
			wantVerify: `{"scheme":"hmac","secrets":["{env.S1}"],"header":"X-Hook-Signature","prefix":"sha256="}`,
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := caddyfiletest.Parse[Ingress](t, tt.input, tt.wantErr)
			if got == nil {
				return
			}
			caddyfiletest.CheckRaw(t, "VerifyRaw", got.VerifyRaw, tt.wantVerify)

			got.VerifyRaw = nil
			if !reflect.DeepEqual(got, tt.want) {
				gj, _ := json.Marshal(got)
				wj, _ := json.Marshal(tt.want)
				t.Errorf("got  %s\nwant %s", gj, wj)
			}
		})
	}
}

// TestIngressJitterZeroSurvivesJSON checks that an explicit `jitter 0`
// reaches the config as 0, not as the default jitter.
func TestIngressJitterZeroSurvivesJSON(t *testing.T) {
	h := new(Ingress)
	in := ingressBlock("retry {", "\tbackoff 1s 2s jitter 0", "}")
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(in)); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"jitter":0`) {
		t.Fatalf("JSON %s lacks \"jitter\":0", raw)
	}
	var back Ingress
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Retry == nil || back.Retry.Jitter == nil || *back.Retry.Jitter != 0 {
		t.Fatalf("jitter after a JSON round trip: %+v", back.Retry)
	}
	if p := back.Retry.Policy(); p.Jitter != 0 {
		t.Fatalf("policy jitter = %v, want 0", p.Jitter)
	}
	if p := (&RetryConfig{}).Policy(); p.Jitter == 0 {
		t.Fatalf("default policy jitter is 0, want the default")
	}
}

func TestIngressValidate(t *testing.T) {
	valid := func() *Ingress {
		return &Ingress{Source: "src", MaxBody: 1 << 20, AckStatus: 202}
	}
	tests := []struct {
		name    string
		modify  func(h *Ingress)
		wantErr string
	}{
		{name: "valid defaults", modify: func(*Ingress) {}},
		{name: "valid ack 200", modify: func(h *Ingress) { h.AckStatus = 200 }},
		{name: "valid full", modify: func(h *Ingress) {
			h.DedupeWindow, h.Timeout = dur(time.Hour), dur(time.Second)
			h.Retry = &RetryConfig{MaxAttempts: 3, Initial: dur(time.Second), Max: dur(time.Minute), Multiplier: 2, Jitter: fptr(0)}
			h.RateLimit = &RateLimit{Events: 1, Interval: dur(time.Second)}
		}},
		{name: "valid schedule", modify: func(h *Ingress) {
			h.Retry = &RetryConfig{Schedule: []caddy.Duration{dur(time.Second), dur(time.Minute)}}
		}},
		{name: "max_body zero", modify: func(h *Ingress) { h.MaxBody = 0 }, wantErr: "max_body must be positive"},
		{name: "max_body negative", modify: func(h *Ingress) { h.MaxBody = -1 }, wantErr: "max_body must be positive"},
		{name: "ack_status zero", modify: func(h *Ingress) { h.AckStatus = 0 }, wantErr: "ack_status must be 200, 202 or 204"},
		{name: "ack_status 201", modify: func(h *Ingress) { h.AckStatus = 201 }, wantErr: "ack_status must be 200, 202 or 204"},
		{name: "negative dedupe_window", modify: func(h *Ingress) { h.DedupeWindow = -1 }, wantErr: "durations must not be negative"},
		{name: "negative timeout", modify: func(h *Ingress) { h.Timeout = dur(-time.Second) }, wantErr: "durations must not be negative"},
		{name: "retry negative attempts", modify: func(h *Ingress) { h.Retry = &RetryConfig{MaxAttempts: -1} }, wantErr: "retry: max_attempts"},
		{name: "retry max below initial", modify: func(h *Ingress) {
			h.Retry = &RetryConfig{Initial: dur(time.Minute), Max: dur(time.Second)}
		}, wantErr: "retry: backoff needs 0 < initial <= max"},
		{name: "retry negative initial", modify: func(h *Ingress) { h.Retry = &RetryConfig{Initial: -1} }, wantErr: "retry: backoff needs"},
		{name: "retry multiplier below 1", modify: func(h *Ingress) { h.Retry = &RetryConfig{Multiplier: 0.5} }, wantErr: "retry: backoff multiplier"},
		{name: "retry jitter 1", modify: func(h *Ingress) { h.Retry = &RetryConfig{Jitter: fptr(1)} }, wantErr: "retry: backoff jitter"},
		{name: "retry jitter negative", modify: func(h *Ingress) { h.Retry = &RetryConfig{Jitter: fptr(-0.5)} }, wantErr: "retry: backoff jitter"},
		{name: "retry schedule zero", modify: func(h *Ingress) {
			h.Retry = &RetryConfig{Schedule: []caddy.Duration{dur(time.Second), 0}}
		}, wantErr: "retry: schedule delays must be positive"},
		{name: "rate_limit zero events", modify: func(h *Ingress) {
			h.RateLimit = &RateLimit{Events: 0, Interval: dur(time.Second)}
		}, wantErr: "rate_limit must be positive"},
		{name: "rate_limit zero interval", modify: func(h *Ingress) {
			h.RateLimit = &RateLimit{Events: 5}
		}, wantErr: "rate_limit must be positive"},
		{name: "rate_limit negative interval", modify: func(h *Ingress) {
			h.RateLimit = &RateLimit{Events: 5, Interval: dur(-time.Second)}
		}, wantErr: "rate_limit must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := valid()
			tt.modify(h)
			err := h.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error containing %q, got none", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %q does not contain %q", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), "webhook_ingress src") {
				t.Errorf("error %q does not name the source", err)
			}
		})
	}
}

// TestIngressProvisionRejectsBadJSON: values a JSON config can carry that
// the Caddyfile parser would refuse must fail provisioning, not crash later.
func TestIngressProvisionRejectsBadJSON(t *testing.T) {
	for name, raw := range map[string]string{
		"rate limit zero events":   `{"source":"s","verify":{"scheme":"none"},"forward_to":"http://127.0.0.1:1/","rate_limit":{"events":0,"interval":1000000000}}`,
		"body_hash without window": `{"source":"s","verify":{"scheme":"none"},"forward_to":"http://127.0.0.1:1/","id_from":[{"kind":"body_hash"}]}`,
		"unknown id_from kind":     `{"source":"s","verify":{"scheme":"none"},"forward_to":"http://127.0.0.1:1/","id_from":[{"kind":"cookie","arg":"x"}]}`,
		"json rule without path":   `{"source":"s","verify":{"scheme":"none"},"forward_to":"http://127.0.0.1:1/","id_from":[{"kind":"json"}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
			defer cancel()
			_, err := ctx.LoadModuleByID("http.handlers.webhook_ingress", json.RawMessage(raw))
			if err == nil {
				t.Fatal("provisioned")
			}
		})
	}
}
