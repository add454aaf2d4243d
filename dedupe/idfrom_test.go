package dedupe

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseRule(t *testing.T) {
	for i, tc := range []struct {
		kind, arg string
		expect    Rule
		expectErr string // substring; "" for no error
	}{
		{kind: "header", arg: "X-GitHub-Delivery", expect: Rule{Kind: "header", Arg: "X-GitHub-Delivery"}},
		{kind: "json", arg: "id", expect: Rule{Kind: "json", Arg: "id"}},
		{kind: "json", arg: "entry.0.messaging.0.message.mid", expect: Rule{Kind: "json", Arg: "entry.0.messaging.0.message.mid"}},
		{kind: "form", arg: "MessageSid", expect: Rule{Kind: "form", Arg: "MessageSid"}},
		{kind: "body_hash", arg: "5m", expect: Rule{Kind: "body_hash", Window: 5 * time.Minute}},
		{kind: "body_hash", arg: "1h30m", expect: Rule{Kind: "body_hash", Window: 90 * time.Minute}},
		{kind: "body_hash", arg: "1ns", expect: Rule{Kind: "body_hash", Window: time.Nanosecond}},
		{kind: "raw_hash", arg: "", expect: Rule{Kind: "raw_hash"}},

		{kind: "header", arg: "", expectErr: "id_from header needs an argument"},
		{kind: "json", arg: "", expectErr: "id_from json needs an argument"},
		{kind: "form", arg: "", expectErr: "id_from form needs an argument"},
		{kind: "body_hash", arg: "", expectErr: "needs a window"},
		{kind: "body_hash", arg: "5", expectErr: "invalid window"},
		{kind: "body_hash", arg: "soon", expectErr: "invalid window"},
		{kind: "body_hash", arg: "0s", expectErr: "invalid window"},
		{kind: "body_hash", arg: "-5m", expectErr: "invalid window"},
		{kind: "raw_hash", arg: "X-A,,X-B", expectErr: "empty header name"},
		{kind: "query", arg: "id", expectErr: `unknown id_from kind "query"`},
		{kind: "Header", arg: "X-Id", expectErr: "unknown id_from kind"},
		{kind: "", arg: "", expectErr: "unknown id_from kind"},
	} {
		actual, err := ParseRule(tc.kind, tc.arg)
		if tc.expectErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.expectErr) {
				t.Errorf("Test %d: ParseRule(%q, %q): error %v, expected one containing %q", i, tc.kind, tc.arg, err, tc.expectErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Test %d: ParseRule(%q, %q): unexpected error: %v", i, tc.kind, tc.arg, err)
			continue
		}
		if !reflect.DeepEqual(actual, tc.expect) {
			t.Errorf("Test %d: ParseRule(%q, %q) = %+v, expected %+v", i, tc.kind, tc.arg, actual, tc.expect)
		}
	}
}

func mustRules(t *testing.T, words ...string) []Rule {
	t.Helper()
	var rules []Rule
	for i := 0; i+1 < len(words); i += 2 {
		r, err := ParseRule(words[i], words[i+1])
		if err != nil {
			t.Fatalf("ParseRule(%q, %q): %v", words[i], words[i+1], err)
		}
		rules = append(rules, r)
	}
	return rules
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestExtract(t *testing.T) {
	const (
		form = "application/x-www-form-urlencoded"
		js   = "application/json"
	)
	messenger := `{"object":"page","entry":[{"id":"p1","messaging":[{"message":{"mid":"m_abc","seq":7}}]},{"id":"p2"}]}`
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	long := strings.Repeat("x", MaxIDLen+1)
	longest := strings.Repeat("y", MaxIDLen)

	for i, tc := range []struct {
		rules   []string // kind, arg pairs
		headers map[string]string
		body    string
		expect  string
	}{
		// header
		{rules: []string{"header", "X-GitHub-Delivery"}, headers: map[string]string{"X-Github-Delivery": "d-1"}, expect: "d-1"},
		{rules: []string{"header", "x-github-delivery"}, headers: map[string]string{"X-GitHub-Delivery": "  d-2 "}, expect: "d-2"},
		{rules: []string{"header", "X-Id"}, headers: map[string]string{"X-Id": "   "}, expect: ""},
		{rules: []string{"header", "X-Id"}, expect: ""},

		// json: top level, nested, arrays
		{rules: []string{"json", "id"}, headers: map[string]string{"Content-Type": js}, body: `{"id":"evt_1"}`, expect: "evt_1"},
		{rules: []string{"json", "id"}, body: ` { "other": 1, "id" : "evt_2" } `, expect: "evt_2"}, // content type not needed
		{rules: []string{"json", "data.object.id"}, body: `{"data":{"object":{"id":"obj_9"}}}`, expect: "obj_9"},
		{rules: []string{"json", "entry.0.messaging.0.message.mid"}, body: messenger, expect: "m_abc"},
		{rules: []string{"json", "entry.1.id"}, body: messenger, expect: "p2"},
		{rules: []string{"json", "0.id"}, body: `[{"id":"first"},{"id":"second"}]`, expect: "first"},
		{rules: []string{"json", "1"}, body: `["a","b"]`, expect: "b"},
		// json numbers are kept as written, big ones exactly
		{rules: []string{"json", "id"}, body: `{"id":12345678901234567890}`, expect: "12345678901234567890"},
		{rules: []string{"json", "id"}, body: `{"id":9007199254740993}`, expect: "9007199254740993"},
		{rules: []string{"json", "id"}, body: `{"id":42}`, expect: "42"},
		{rules: []string{"json", "id"}, body: `{"id":-1.5e3}`, expect: "-1.5e3"},
		{rules: []string{"json", "entry.0.messaging.0.message.seq"}, body: messenger, expect: "7"},
		// json paths that find nothing usable
		{rules: []string{"json", "missing"}, body: `{"id":"x"}`, expect: ""},
		{rules: []string{"json", "data.id"}, body: `{"data":"flat"}`, expect: ""},
		{rules: []string{"json", "entry.2.id"}, body: messenger, expect: ""},
		{rules: []string{"json", "entry.-1.id"}, body: messenger, expect: ""},
		{rules: []string{"json", "entry.first.id"}, body: messenger, expect: ""},
		{rules: []string{"json", "entry"}, body: messenger, expect: ""},              // an array
		{rules: []string{"json", "entry.0"}, body: messenger, expect: ""},            // an object
		{rules: []string{"json", "ok"}, body: `{"ok":true}`, expect: ""},             // a bool
		{rules: []string{"json", "id"}, body: `{"id":null}`, expect: ""},             // null
		{rules: []string{"json", "id"}, body: `{"id":""}`, expect: ""},               // empty
		{rules: []string{"json", "id"}, body: `{"id":"x"`, expect: ""},               // truncated
		{rules: []string{"json", "id"}, body: `id=form-1`, expect: ""},               // not JSON
		{rules: []string{"json", "id"}, body: ``, expect: ""},                        // no body
		{rules: []string{"json", "0"}, body: `{"0":"key zero"}`, expect: "key zero"}, // digits are keys in objects

		// form, only for url-encoded bodies
		{rules: []string{"form", "MessageSid"}, headers: map[string]string{"Content-Type": form}, body: "AccountSid=AC1&MessageSid=SM123&Body=hi+there", expect: "SM123"},
		{rules: []string{"form", "MessageSid"}, headers: map[string]string{"Content-Type": form + "; charset=utf-8"}, body: "MessageSid=SM%2F1", expect: "SM/1"},
		{rules: []string{"form", "MessageSid"}, headers: map[string]string{"Content-Type": "Application/X-WWW-Form-Urlencoded"}, body: "MessageSid=SM2", expect: "SM2"},
		{rules: []string{"form", "MessageSid"}, headers: map[string]string{"Content-Type": js}, body: "MessageSid=SM3", expect: ""},
		{rules: []string{"form", "MessageSid"}, headers: map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, body: "MessageSid=SM4", expect: ""},
		{rules: []string{"form", "MessageSid"}, body: "MessageSid=SM5", expect: ""},
		{rules: []string{"form", "MessageSid"}, headers: map[string]string{"Content-Type": form}, body: "Other=1", expect: ""},
		{rules: []string{"form", "MessageSid"}, headers: map[string]string{"Content-Type": form}, body: "MessageSid=%zz", expect: ""},

		// rules are tried in order; the first that finds an ID wins
		{rules: []string{"header", "X-Id", "json", "id"}, headers: map[string]string{"X-Id": "from-header"}, body: `{"id":"from-json"}`, expect: "from-header"},
		{rules: []string{"json", "id", "header", "X-Id"}, headers: map[string]string{"X-Id": "from-header"}, body: `{"id":"from-json"}`, expect: "from-json"},
		{rules: []string{"header", "X-Id", "json", "id"}, body: `{"id":"from-json"}`, expect: "from-json"},
		{rules: []string{"json", "missing", "json", "data.id", "header", "X-Id"}, headers: map[string]string{"X-Id": "h"}, body: `{"data":{"id":"nested"}}`, expect: "nested"},
		{rules: []string{"json", "id", "form", "id", "header", "X-Id"}, headers: map[string]string{"Content-Type": form, "X-Id": "h"}, body: "id=f", expect: "f"},
		{rules: []string{"json", "id", "form", "id", "header", "X-Id"}, headers: map[string]string{"X-Id": "last"}, body: "id=f", expect: "last"},
		{rules: []string{"json", "id", "header", "X-Id"}, body: `{"id":"x"}`, expect: "x"},
		{rules: nil, headers: map[string]string{"X-Id": "h"}, body: `{"id":"x"}`, expect: ""},

		// long IDs are hashed; up to 256 bytes they are kept
		{rules: []string{"header", "X-Id"}, headers: map[string]string{"X-Id": longest}, expect: longest},
		{rules: []string{"header", "X-Id"}, headers: map[string]string{"X-Id": long}, expect: sha(long)},
		{rules: []string{"json", "id"}, body: `{"id":"` + long + `"}`, expect: sha(long)},
	} {
		r := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(tc.body))
		for k, v := range tc.headers {
			r.Header.Set(k, v)
		}
		actual := Extract(mustRules(t, tc.rules...), r, []byte(tc.body), now)
		if actual != tc.expect {
			t.Errorf("Test %d: rules %q on %q with %v: got %q, expected %q", i, tc.rules, tc.body, tc.headers, actual, tc.expect)
		}
		if len(actual) > MaxIDLen {
			t.Errorf("Test %d: ID of %d bytes, expected at most %d", i, len(actual), MaxIDLen)
		}
	}
}

func TestExtractBodyHash(t *testing.T) {
	const window = 5 * time.Minute
	rules := mustRules(t, "body_hash", "5m")
	// a time at the start of a window (Unix nanoseconds divisible by it)
	start := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	if start.UnixNano()%int64(window) != 0 {
		t.Fatalf("test setup: %v is not at the start of a %v window", start, window)
	}
	id := func(body string, at time.Time) string {
		t.Helper()
		r := httptest.NewRequest(http.MethodPost, "/hook", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		got := Extract(rules, r, []byte(body), at)
		if !strings.HasPrefix(got, "bh:") || len(got) != len("bh:")+32 {
			t.Fatalf("body_hash ID %q, expected bh: and 32 hex digits", got)
		}
		return got
	}

	base := id(`{"a":1,"b":{"c":[1,2,{"d":"e"}],"f":null},"big":12345678901234567890}`, start)
	for i, tc := range []struct {
		body string
		at   time.Time
		same bool
	}{
		// the same JSON, whatever the key order and whitespace, in the same window
		{body: `{"a":1,"b":{"c":[1,2,{"d":"e"}],"f":null},"big":12345678901234567890}`, at: start, same: true},
		{body: `{"big":12345678901234567890,"b":{"f":null,"c":[1,2,{"d":"e"}]},"a":1}`, at: start, same: true},
		{body: "{\n  \"a\": 1,\n  \"b\": { \"c\": [ 1, 2, { \"d\": \"e\" } ], \"f\": null },\n  \"big\": 12345678901234567890\n}\n", at: start, same: true},
		{body: `{"a":1,"b":{"c":[1,2,{"d":"e"}],"f":null},"big":12345678901234567890}`, at: start.Add(window - time.Nanosecond), same: true},
		{body: `{"a":1,"b":{"c":[1,2,{"d":"e"}],"f":null},"big":12345678901234567890}`, at: start.Add(time.Minute), same: true},
		// another window
		{body: `{"a":1,"b":{"c":[1,2,{"d":"e"}],"f":null},"big":12345678901234567890}`, at: start.Add(window), same: false},
		{body: `{"a":1,"b":{"c":[1,2,{"d":"e"}],"f":null},"big":12345678901234567890}`, at: start.Add(-time.Nanosecond), same: false},
		// another body
		{body: `{"a":2,"b":{"c":[1,2,{"d":"e"}],"f":null},"big":12345678901234567890}`, at: start, same: false},
		{body: `{"a":1,"b":{"c":[2,1,{"d":"e"}],"f":null},"big":12345678901234567890}`, at: start, same: false}, // array order matters
		{body: `{"a":1,"b":{"c":[1,2,{"d":"e"}],"f":null},"big":12345678901234567891}`, at: start, same: false}, // big ints are exact
		{body: `{"a":1,"b":{"c":[1,2,{"d":"e"}]},"big":12345678901234567890}`, at: start, same: false},
	} {
		if actual := id(tc.body, tc.at); (actual == base) != tc.same {
			t.Errorf("Test %d: %s at %v: ID %s, base %s, expected same: %v", i, tc.body, tc.at, actual, base, tc.same)
		}
	}

	// bodies that are not JSON are hashed as they are
	raw := id("a=1&b=2", start)
	if again := id("a=1&b=2", start.Add(time.Second)); again != raw {
		t.Errorf("the same raw body in the same window: %s and %s", raw, again)
	}
	if other := id("b=2&a=1", start); other == raw {
		t.Errorf("different raw bodies gave the same ID %s", raw)
	}
	if other := id("a=1&b=2 ", start); other == raw {
		t.Errorf("raw bodies are not normalized, yet a trailing space gave the same ID %s", raw)
	}

	// only a body that is one JSON value is normalized: bodies that merely
	// start with the same JSON value (NDJSON batches, trailing data) differ
	for i, pair := range [][2]string{
		{"{\"a\":1}\n{\"b\":2}\n", "{\"a\":1}\n{\"b\":3}\n"},
		{`{"a":1}`, `{"a":1} trailing`},
		{`{"a":1}`, `{"a":1}{"a":1}`},
		{`[1,2]`, `[1,2]]`},
	} {
		if x, y := id(pair[0], start), id(pair[1], start); x == y {
			t.Errorf("Test %d: %q and %q have the same body hash %s", i, pair[0], pair[1], x)
		}
	}
	if x, y := id(`{"a":1}`, start), id(" {\"a\":1}\r\n\t", start); x != y {
		t.Errorf("surrounding whitespace changed the body hash: %s and %s", x, y)
	}

	// a rule before body_hash wins; body_hash is the fallback
	r := httptest.NewRequest(http.MethodPost, "/hook", nil)
	if got := Extract(mustRules(t, "json", "id", "body_hash", "5m"), r, []byte(`{"id":"evt"}`), start); got != "evt" {
		t.Errorf("json before body_hash: got %q, expected evt", got)
	}
	if got := Extract(mustRules(t, "json", "missing", "body_hash", "5m"), r, []byte(`{"id":"evt"}`), start); got != id(`{"id":"evt"}`, start) {
		t.Errorf("json then body_hash fallback: got %q, expected the body hash", got)
	}
}
