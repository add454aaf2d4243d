package ingress

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/fields"
)

func writeSchema(t testing.TB, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const orderSchema = `{
	"type": "object",
	"required": ["id", "actor"],
	"properties": {
		"id": {"type": "string", "pattern": "^evt_"},
		"amount": {"type": "integer", "minimum": 0},
		"actor": {"type": "object", "required": ["username"], "properties": {"username": {"type": "string"}}},
		"items": {"type": "array", "items": {"type": "object", "required": ["sku"]}},
		"a/b~c": {"type": "boolean"}
	}
}`

// TestSchemaViolations: the first violation's JSON pointer and reason, a
// missing required property named by its own pointer.
func TestSchemaViolations(t *testing.T) {
	sch, err := compileSchema(writeSchema(t, orderSchema))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		body, field, reason string
	}{
		{`{"id":"evt_1","actor":{"username":"ann"},"amount":3,"items":[{"sku":"x"}]}`, "", ""},
		{`{"actor":{"username":"ann"}}`, "/id", "required"},
		{`{"id":"evt_1","actor":{}}`, "/actor/username", "required"},
		{`{"id":"ord_1","actor":{"username":"ann"}}`, "/id", "does not match pattern"},
		{`{"id":"evt_1","actor":{"username":"ann"},"amount":-1}`, "/amount", "minimum"},
		{`{"id":"evt_1","actor":{"username":"ann"},"amount":1.5}`, "/amount", "want integer"},
		{`{"id":"evt_1","actor":{"username":"ann"},"items":[{"sku":"x"},{}]}`, "/items/1/sku", "required"},
		{`{"id":"evt_1","actor":{"username":"ann"},"a/b~c":1}`, "/a~1b~0c", "want boolean"},
		{`[1,2]`, "", "want object"},
	} {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tc.body))
		err := sch.Validate(fields.Read(r, []byte(tc.body)).JSON())
		if tc.reason == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.body, err)
			}
			continue
		}
		field, reason := violation(err)
		if field != tc.field || !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: field %q reason %q, want %q containing %q", tc.body, field, reason, tc.field, tc.reason)
		}
	}
}

// TestSchemaRefused: a schema that cannot be used is refused at provision,
// naming the file and the reason.
func TestSchemaRefused(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.json")
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing file", missing, "schema " + missing + ": open"},
		{"not JSON", writeSchema(t, `{"type":`), "not JSON"},
		{"bad keyword value", writeSchema(t, `{"type":"integer","minimum":"zero"}`), "minimum"},
		{"unknown type", writeSchema(t, `{"type":"strnig"}`), `not a valid JSON Schema: at "/type": value must be one of`},
		{"remote ref", writeSchema(t, `{"$ref":"https://example.com/schema.json"}`), "example.com"},
	} {
		_, err := compileSchema(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "schema ") {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

// TestAcceptLimiter: a full window's worth at once, then Retry-After
// until the next token; a refused request does not use a token up.
func TestAcceptLimiter(t *testing.T) {
	l, key, err := acquireAcceptLimiter("limited-test", &RateLimit{Events: 3, Interval: dur(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	defer acceptPool.Delete(key)
	now := time.Now()
	for i := range 3 {
		if _, ok := l.take(now); !ok {
			t.Fatalf("request %d refused", i+1)
		}
	}
	for range 5 { // refused ones take nothing
		if ra, ok := l.take(now); ok || ra != 20 {
			t.Fatalf("4th request: ok %v retry after %d, want refused for 20s (one token each 20s)", ok, ra)
		}
	}
	if _, ok := l.take(now.Add(20 * time.Second)); !ok {
		t.Fatal("refused after the retry-after")
	}
	// a reload (another acquire) shares the limiter: no refill
	l2, key2, _ := acquireAcceptLimiter("limited-test", &RateLimit{Events: 3, Interval: dur(time.Minute)})
	defer acceptPool.Delete(key2)
	if l2 != l {
		t.Fatal("a reload got a fresh limiter")
	}
}

func TestJSONPointer(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{{nil, ""}, {[]string{"a"}, "/a"}, {[]string{"a/b", "~x", "0"}, "/a~1b/~0x/0"}} {
		if got := jsonPointer(tc.in); got != tc.want {
			t.Errorf("jsonPointer(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// BenchmarkSchemaValidate: a 1 KiB body against a schema of a dozen
// rules (target: under 50µs). "validate" is the schema's own
// cost (the ingress decodes the body once, for the id and type rules too);
// "decode+validate" adds that decoding.
func BenchmarkSchemaValidate(b *testing.B) {
	sch, err := compileSchema(writeSchema(b, orderSchema))
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"id":"evt_1","actor":{"username":"ann"},"amount":3,"items":[` +
		strings.Repeat(`{"sku":"sku-0001","qty":1,"price":1200,"name":"a product name"},`, 15) + `{"sku":"x"}]}`)
	if len(body) < 1000 || len(body) > 1100 {
		b.Fatalf("body is %d bytes, want about 1 KiB", len(body))
	}
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	b.Run("validate", func(b *testing.B) {
		doc := fields.Read(r, body).JSON()
		b.ReportAllocs()
		for b.Loop() {
			if err := sch.Validate(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode+validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := sch.Validate(fields.Read(r, body).JSON()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestEdgeConfig: what provisioning refuses of allow_ips, accept_rate and
// schema, each with its reason.
func TestEdgeConfig(t *testing.T) {
	t.Setenv("HOOKLINE_EMPTY_IPS", "")
	t.Setenv("HOOKLINE_TWO_IPS", "10.0.0.0/8,192.168.1.1")
	checkProvision(t, `{"source":"edge","verify":{"scheme":"none"},"forward_to":"http://127.0.0.1:1/"`, []provisionCase{
		{"ranges and a placeholder of two", `,"allow_ips":["3.18.12.63/32","{env.HOOKLINE_TWO_IPS}","2001:db8::/32"]}`, ""},
		{"bad CIDR", `,"allow_ips":["3.18.12.63/33"]}`, "allow_ips: parsing CIDR expression '3.18.12.63/33'"},
		{"bad IP", `,"allow_ips":["stripe.com"]}`, "allow_ips: invalid IP address: 'stripe.com'"},
		{"placeholder empty", `,"allow_ips":["{env.HOOKLINE_EMPTY_IPS}"]}`, `allow_ips "{env.HOOKLINE_EMPTY_IPS}": evaluated placeholder {env.HOOKLINE_EMPTY_IPS} is empty`},
		{"accept_rate zero", `,"accept_rate":{"events":0,"interval":"1m"}}`, "accept_rate must be positive"},
		{"schema missing", `,"schema":"/nonexistent/order.json"}`, "schema /nonexistent/order.json: open"},
	})
}
