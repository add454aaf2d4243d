package fields

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func request(contentType, body string, headers map[string]string) *Request {
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.Header.Set("Content-Type", contentType)
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	return Read(r, []byte(body))
}

func TestFields(t *testing.T) {
	const doc = `{"id":"evt_1","n":42,"ok":true,"none":null,"obj":{"a":1},"list":[{"id":"x"}]}`
	js := request("application/json", doc, map[string]string{"X-Id": "  d-1  "})
	form := request("application/x-www-form-urlencoded; charset=utf-8", "MessageSid=SM1&Empty=", nil)
	notForm := request("text/plain", "MessageSid=SM1", nil)
	for _, tc := range []struct {
		name       string
		q          *Request
		kind, path string
		text       string // Text
		field      string // Field
		ok         bool   // Field's ok
	}{
		{"header: Text trims, Field keeps", js, Header, "X-Id", "d-1", "  d-1  ", true},
		{"missing header", js, Header, "X-None", "", "", false},
		{"json string", js, JSON, "id", "evt_1", "evt_1", true},
		{"json number as written", js, JSON, "n", "42", "42", true},
		{"json bool: a field, not an id", js, JSON, "ok", "", "true", true},
		{"json null: a field, not an id", js, JSON, "none", "", "null", true},
		{"json object: neither", js, JSON, "obj", "", "", false},
		{"json array index", js, JSON, "list.0.id", "x", "x", true},
		{"json index out of range", js, JSON, "list.1.id", "", "", false},
		{"json path into a scalar", js, JSON, "id.x", "", "", false},
		{"json of a form body", form, JSON, "MessageSid", "", "", false},
		{"form field", form, Form, "MessageSid", "SM1", "SM1", true},
		{"empty form field: present", form, Form, "Empty", "", "", true},
		{"missing form field", form, Form, "Nope", "", "", false},
		{"form of another content type", notForm, Form, "MessageSid", "", "", false},
		{"unknown kind", js, "query", "id", "", "", false},
	} {
		if got := tc.q.Text(tc.kind, tc.path); got != tc.text {
			t.Errorf("%s: Text = %q, want %q", tc.name, got, tc.text)
		}
		if got, ok := tc.q.Field(tc.kind, tc.path); got != tc.field || ok != tc.ok {
			t.Errorf("%s: Field = %q %v, want %q %v", tc.name, got, ok, tc.field, tc.ok)
		}
	}
	for path, want := range map[string]bool{"id": true, "none": false, "missing": false, "obj.a": true} {
		if js.Present(path) != want {
			t.Errorf("Present(%q) = %v, want %v", path, !want, want)
		}
	}
	for kind, want := range map[string]bool{Header: true, JSON: true, Form: true, "body_hash": false, "": false} {
		if IsKind(kind) != want {
			t.Errorf("IsKind(%q) = %v", kind, !want)
		}
	}
}

// The JSON body is decoded once, however many readers look into it.
func TestJSONDecodedOnce(t *testing.T) {
	q := request("application/json", `{"a":{"b":"c"}}`, nil)
	first := q.JSON()
	q.body = []byte(`{"a":{"b":"changed"}}`) // a second decode would see this
	if q.Text(JSON, "a.b") != "c" || !q.Present("a") {
		t.Fatal("the body was decoded again")
	}
	if m, ok := first.(map[string]any); !ok || m["a"] == nil {
		t.Fatalf("JSON = %#v", first)
	}
	if request("application/json", "not json", nil).JSON() != nil {
		t.Fatal("a body that is not JSON decoded to a value")
	}
}
