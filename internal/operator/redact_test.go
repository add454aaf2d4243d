package operator

import (
	"bytes"
	"net/http"
	"reflect"
	"testing"

	"github.com/hookline/hookline/storage"
)

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pass@host.example/path?q=1":   "https://[redacted]@host.example/path?q=1",
		"https://user@host.example":                 "https://[redacted]@host.example",
		"http://u:p%40ss@host.example:8080/a@b":     "http://[redacted]@host.example:8080/a@b",
		"http://a@b@host.example/":                  "http://[redacted]@host.example/",
		"http://host.example/a@b?c=d@e#f@g":         "http://host.example/a@b?c=d@e#f@g",
		"http://host.example":                       "http://host.example",
		"http://user:pass@host.example?x":           "http://[redacted]@host.example?x",
		"http://user:pass@host.example#x":           "http://[redacted]@host.example#x",
		"alert":                                     "alert",
		"":                                          "",
		"https://us er:p\x00ss@host.example/broken": "https://[redacted]@host.example/broken",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactHeaders(t *testing.T) {
	in := http.Header{
		"Authorization":       {"Bearer secret"},
		"Proxy-Authorization": {"Basic c2VjcmV0"},
		"Cookie":              {"session=secret", "b=2"},
		"cookie":              {"lower=secret"}, // not canonical: still redacted
		"Content-Type":        {"application/json"},
		"X-Signature":         {"sha256=abc"},
	}
	orig := in.Clone()
	got := RedactHeaders(in)
	want := http.Header{
		"Authorization":       {Redacted},
		"Proxy-Authorization": {Redacted},
		"Cookie":              {Redacted, Redacted},
		"cookie":              {Redacted},
		"Content-Type":        {"application/json"},
		"X-Signature":         {"sha256=abc"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("RedactHeaders = %v, want %v", got, want)
	}
	if !reflect.DeepEqual(in, orig) {
		t.Fatalf("RedactHeaders modified its argument: %v", in)
	}
	if RedactHeaders(nil) != nil {
		t.Fatal("nil headers")
	}
	// a DLQ entry as the API shows it, the stored one untouched
	e := &storage.DLQEntry{ID: "x", Source: "graph", Upstream: "https://u:p@h/x", Headers: orig.Clone(), Payload: []byte(`{"clientState":"s3cret"}`)}
	v := viewEntry(redactingApp{}, e)
	if v.Upstream != "https://[redacted]@h/x" || v.Headers.Get("Authorization") != Redacted || v.Payload != `{"clientState":"[redacted]"}` {
		t.Fatalf("viewEntry: %+v", v)
	}
	if e.Upstream != "https://u:p@h/x" || e.Headers.Get("Authorization") != "Bearer secret" || string(e.Payload) != `{"clientState":"s3cret"}` {
		t.Fatalf("viewEntry modified the entry: %+v", e)
	}
	if listed := redactEntry(redactingApp{}, *e); string(listed.Payload) != `{"clientState":"[redacted]"}` {
		t.Fatalf("a listed entry's payload: %s", listed.Payload)
	}
}

// redactingApp is an App whose scheme carries "s3cret" in the body: what
// the API shows goes through its RedactPayload.
type redactingApp struct{ App }

func (redactingApp) RedactPayload(source string, p []byte) []byte {
	if source != "graph" {
		return p
	}
	return bytes.ReplaceAll(p, []byte("s3cret"), []byte(Redacted))
}
