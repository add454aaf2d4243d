package dedupe

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestNormalize(t *testing.T) {
	hash := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return hex.EncodeToString(sum[:])
	}
	exact256 := strings.Repeat("a", 255) + "~"
	// the delivery side sends the id as the Webhook-Id header: it must
	// survive net/http's own header checks and arrive unchanged
	var received string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received = r.Header.Get("Webhook-Id")
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name, id string
		kept     bool
	}{
		{name: "empty stays empty", id: "", kept: true},
		{name: "stripe event id", id: "evt_1MhUT6E0b6fckueSlc4GyvIi", kept: true},
		{name: "github delivery guid", id: "72d3162e-cc78-11e3-81ab-4c9367dc0958", kept: true},
		{name: "whatsapp wamid with base64 padding", id: "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=", kept: true},
		{name: "all visible ASCII and an inner space", id: "! ~\"#$%&'()*+,-./09:;<=>?@AZ[\\]^_`az{|}", kept: true},
		{name: "exactly 256 printable bytes", id: exact256, kept: true},
		{name: "257 printable bytes", id: exact256 + "b"},
		{name: "newline", id: "evt_1\nX-Injected: yes"},
		{name: "carriage return", id: "evt_1\r"},
		{name: "NUL", id: "evt\x00"},
		{name: "tab", id: "evt\t1"},
		{name: "DEL", id: "evt\x7f"},
		{name: "escape", id: "\x1b[31mred"},
		{name: "unicode text", id: "événement-1"},
		{name: "emoji", id: "😮"},
		{name: "invalid UTF-8", id: "evt\xff"},
		{name: "leading space", id: " evt_1"},
		{name: "trailing space", id: "evt_1 "},
		{name: "only a space", id: " "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Normalize(tc.id)
			want := tc.id
			if !tc.kept {
				want = hash(tc.id)
			}
			if got != want {
				t.Fatalf("Normalize(%q) = %q, want %q", tc.id, got, want)
			}
			if again := Normalize(got); again != got {
				t.Errorf("Normalize is not idempotent: %q then %q", got, again)
			}
			if got == "" {
				return
			}
			if len(got) > MaxIDLen || !Printable(got) {
				t.Errorf("Normalize(%q) = %q is not printable text of at most %d bytes", tc.id, got, MaxIDLen)
			}
			req, err := http.NewRequest(http.MethodPost, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Webhook-Id", got)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatalf("sending Webhook-Id %q: %v", got, err)
			}
			resp.Body.Close()
			if received != got {
				t.Errorf("Webhook-Id sent as %q arrived as %q", got, received)
			}
		})
	}
	if Normalize("a\nb") == Normalize("a\rb") {
		t.Error("distinct ids with control characters normalized alike")
	}
}

func TestExtractNormalizes(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	r := httptest.NewRequest(http.MethodPost, "/hook", nil)
	// a JSON string may hold any control character: it must not reach a header
	body := []byte(`{"id":"evt_1\r\nX-Evil: 1","other":"caf\u00e9"}`)
	got := Extract([]Rule{JSON("id")}, r, body, now)
	if want := Normalize("evt_1\r\nX-Evil: 1"); got != want || len(got) != 64 {
		t.Fatalf("Extract = %q, want %q", got, want)
	}
	if got := Extract([]Rule{JSON("other")}, r, body, now); got != Normalize("café") || got == "café" {
		t.Fatalf("Extract of a non-ASCII id = %q, want its hash", got)
	}
	if got := Extract([]Rule{JSON("id")}, r, []byte(`{"id":"evt_2"}`), now); got != "evt_2" {
		t.Fatalf("Extract = %q, want evt_2", got)
	}
}

func TestRuleConditions(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	wa := JSON("entry.0.changes.0.value.messages.0.id").Unless("entry.0.changes.0.value.statuses", "entry.1")
	for _, tc := range []struct {
		name  string
		rules []Rule
		body  string
		want  string // "" none; "raw" the raw hash of body
	}{
		{name: "unless: path missing", rules: []Rule{wa}, want: "m1",
			body: `{"entry":[{"changes":[{"value":{"messages":[{"id":"m1"}]}}]}]}`},
		{name: "unless: path present", rules: []Rule{wa},
			body: `{"entry":[{"changes":[{"value":{"messages":[{"id":"m1"}],"statuses":[{"id":"m0"}]}}]}]}`},
		{name: "unless: an empty array is present", rules: []Rule{wa},
			body: `{"entry":[{"changes":[{"value":{"messages":[{"id":"m1"}],"statuses":[]}}]}]}`},
		{name: "unless: null is absent", rules: []Rule{wa}, want: "m1",
			body: `{"entry":[{"changes":[{"value":{"messages":[{"id":"m1"}],"statuses":null}}]}]}`},
		{name: "unless: index past the end is absent", rules: []Rule{wa}, want: "m1",
			body: `{"entry":[{"changes":[{"value":{"messages":[{"id":"m1"}]}}]}]}`},
		{name: "unless: a second entry", rules: []Rule{wa},
			body: `{"entry":[{"changes":[{"value":{"messages":[{"id":"m1"}]}}]},{"id":"x"}]}`},
		{name: "only if: present", rules: []Rule{JSON("id").OnlyIf("kind")}, body: `{"id":"a","kind":"x"}`, want: "a"},
		{name: "only if: empty string is present", rules: []Rule{JSON("id").OnlyIf("kind")}, body: `{"id":"a","kind":""}`, want: "a"},
		{name: "only if: missing", rules: []Rule{JSON("id").OnlyIf("kind")}, body: `{"id":"a"}`},
		{name: "only if: null", rules: []Rule{JSON("id").OnlyIf("kind")}, body: `{"id":"a","kind":null}`},
		{name: "a skipped rule falls through to the next", rules: []Rule{JSON("id").OnlyIf("kind"), RawHash()},
			body: `{"id":"a"}`, want: "raw"},
		{name: "conditions on a header rule", rules: []Rule{Header("X-Id").Unless("batch")}, body: `{"batch":[1]}`},
		{name: "not JSON: only-if fails", rules: []Rule{Header("X-Id").OnlyIf("a")}, body: `a=1`},
		{name: "not JSON: unless holds", rules: []Rule{Header("X-Id").Unless("a")}, body: `a=1`, want: "h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/hook", nil)
			r.Header.Set("X-Id", "h")
			want := tc.want
			if want == "raw" {
				sum := sha256.Sum256([]byte(tc.body))
				want = "rh:" + hex.EncodeToString(sum[:])
			}
			if got := Extract(tc.rules, r, []byte(tc.body), now); got != want {
				t.Errorf("rules %v on %s: got %q, want %q", tc.rules, tc.body, got, want)
			}
		})
	}
}

func TestExtractRawHash(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/hook", nil)
	id := func(body string, at time.Time) string {
		return Extract([]Rule{RawHash()}, r, []byte(body), at)
	}
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	a := id(`{"a":1,"b":2}`, t0)
	sum := sha256.Sum256([]byte(`{"a":1,"b":2}`))
	if want := "rh:" + hex.EncodeToString(sum[:]); a != want {
		t.Fatalf("raw_hash = %q, want %q", a, want)
	}
	// no time bucket: a byte-identical resend a day later is the same id
	if b := id(`{"a":1,"b":2}`, t0.Add(24*time.Hour)); b != a {
		t.Errorf("byte-identical bodies at different times: %q and %q", a, b)
	}
	// exact bytes: key order and whitespace count (unlike body_hash)
	for _, other := range []string{`{"b":2,"a":1}`, `{"a":1, "b":2}`, `{"a":1,"b":2}` + "\n", `{"a":1,"b":3}`} {
		if id(other, t0) == a {
			t.Errorf("%q has the raw hash of a different body", other)
		}
	}
	if got := id("", t0); got != "" {
		t.Errorf("empty body: raw_hash = %q, want none", got)
	}
	if got := Extract([]Rule{RawHash()}, r, []byte("MessageSid=SM1&MessageStatus=sent"), t0); !strings.HasPrefix(got, "rh:") || len(got) != 3+64 {
		t.Errorf("form body: raw_hash = %q", got)
	}
}

func TestRuleString(t *testing.T) {
	for _, tc := range []struct {
		rule Rule
		want string
	}{
		{Header("X-GitHub-Delivery"), "header X-GitHub-Delivery"},
		{JSON("id"), "json id"},
		{Form("MessageSid"), "form MessageSid"},
		{RawHash(), "raw_hash"},
		{Rule{Kind: KindBodyHash, Window: 5 * time.Minute}, "body_hash 5m0s"},
		{JSON("a.0.id").OnlyIf("a.0.kind").Unless("a.1", "b"), "json a.0.id if a.0.kind unless a.1 unless b"},
	} {
		if got := tc.rule.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
	// OnlyIf and Unless never write into the receiver's slices
	base := JSON("id").Unless("a")
	x, y := base.Unless("b"), base.Unless("c")
	if x.String() != "json id unless a unless b" || y.String() != "json id unless a unless c" {
		t.Errorf("shared conditions: %v and %v", x, y)
	}
}

func TestRuleValidate(t *testing.T) {
	for _, tc := range []struct {
		rule    Rule
		wantErr string
	}{
		{rule: Header("X-Id")},
		{rule: JSON("a.0.b").OnlyIf("a.0.c").Unless("a.1")},
		{rule: Form("MessageSid")},
		{rule: RawHash()},
		{rule: Rule{Kind: KindBodyHash, Window: time.Minute}},
		{rule: Header(""), wantErr: "needs an argument"},
		{rule: Rule{Kind: KindBodyHash}, wantErr: "positive window"},
		{rule: Rule{Kind: KindBodyHash, Window: -time.Minute}, wantErr: "positive window"},
		{rule: Rule{Kind: KindJSON, Arg: "id", Window: time.Minute}, wantErr: "takes no window"},
		{rule: Rule{Kind: KindRawHash, Arg: "X-A, "}, wantErr: "empty header name"},
		{rule: Rule{Kind: "query", Arg: "id"}, wantErr: "unknown id_from kind"},
		{rule: JSON("id").Unless(""), wantErr: "empty JSON path"},
	} {
		err := tc.rule.Validate()
		if tc.wantErr == "" && err != nil {
			t.Errorf("%v: unexpected error %v", tc.rule, err)
		}
		if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%v: error %v, want one containing %q", tc.rule, err, tc.wantErr)
		}
	}
}

// raw_hash with headers: the same bytes with different header values are
// different ids (GitLab: two pushes deleting one branch, each its own
// X-Gitlab-Event-UUID), the same bytes and values the same id (a retry).
func TestRawHashWithHeaders(t *testing.T) {
	rules := []Rule{RawHash("X-Gitlab-Event-UUID")}
	body := []byte(`{"object_kind":"push","ref":"refs/heads/tmp","after":"0000000000000000000000000000000000000000"}`)
	req := func(uuid string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Header.Set("X-Gitlab-Event-UUID", uuid)
		return r
	}
	now := time.Now()
	a := Extract(rules, req("11111111-1111-1111-1111-111111111111"), body, now)
	b := Extract(rules, req("22222222-2222-2222-2222-222222222222"), body, now)
	again := Extract(rules, req("11111111-1111-1111-1111-111111111111"), body, now.Add(time.Hour))
	if a == "" || a == b || a != again {
		t.Fatalf("ids %q, %q, retry %q: want distinct for distinct uuids, equal for a retry", a, b, again)
	}
	if plain := Extract([]Rule{RawHash()}, req("x"), body, now); plain == a {
		t.Fatal("the header value did not change the hash")
	}
}
