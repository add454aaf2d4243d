package httpjson

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// TestAppendStringIsEncodingJSON: AppendString must give encoding/json's
// bytes for every kind of string an event id or a message can be.
func TestAppendStringIsEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "evt_123", `quote " and \ backslash`, "<script>&amp;</script>",
		"tab\tnew\nline\r\b\f", "\x00\x01\x1f\x7f", "é ü 日本 🎉", "line\u2028para\u2029",
		"bad \xff utf8 \xc3", "\xed\xa0\x80 surrogate",
	} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendString(nil, s); string(got) != string(want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

// TestWriteBytesHeaders: the headers are Write's, each value its own
// slice (an Add to one does not change another).
func TestWriteBytesHeaders(t *testing.T) {
	for _, tc := range []struct {
		name, body, length string
	}{
		{"short", "{}\n", "3"},
		{"beyond the table", string(make([]byte, 600)), "600"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			WriteBytes(rec, 202, []byte(tc.body))
			h := rec.Header()
			if rec.Code != 202 || rec.Body.String() != tc.body {
				t.Fatalf("status %d body %q", rec.Code, rec.Body.String())
			}
			for k, v := range map[string]string{"Content-Type": "application/json", "Content-Length": tc.length,
				"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"} {
				if got := h.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			h.Add("Content-Type", "x")
			if h.Get("Content-Length") != tc.length || len(h.Values("Content-Length")) != 1 {
				t.Errorf("an Add to Content-Type changed Content-Length: %q", h.Values("Content-Length"))
			}
		})
	}
}
