package verifiers

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestRedactJSONMembers: the value of every member of the name is
// "[redacted]", every other byte kept; a body the parser cannot follow but
// that holds the name is shown as "[redacted]" alone.
func TestRedactJSONMembers(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"Graph batch",
			`{"value":[{"subscriptionId":"s1","clientState":"secretClientValue","changeType":"created"},{"clientState" : "other","x":1}]}`,
			`{"value":[{"subscriptionId":"s1","clientState":"[redacted]","changeType":"created"},{"clientState" : "[redacted]","x":1}]}`},
		{"layout kept", "{\n  \"value\": [\n    {\n      \"clientState\": \"s\",\n      \"n\": 1\n    }\n  ]\n}",
			"{\n  \"value\": [\n    {\n      \"clientState\": \"[redacted]\",\n      \"n\": 1\n    }\n  ]\n}"},
		{"not a string", `{"clientState":{"a":[1,2,{"clientState":"x"}]},"b":2}`, `{"clientState":"[redacted]","b":2}`},
		{"number and null", `{"clientState":12,"c":[{"clientState":null}]}`, `{"clientState":"[redacted]","c":[{"clientState":"[redacted]"}]}`},
		{"the name as a value only", `{"a":"clientState"}`, `{"a":"clientState"}`},
		{"escaped quote in the secret", `{"clientState":"a\"b","z":0}`, `{"clientState":"[redacted]","z":0}`},
		{"absent", `{"value":[]}`, `{"value":[]}`},
		{"escaped name", `{"client\u0053tate":"s"}`, `{"client\u0053tate":"[redacted]"}`},
		{"not JSON, holding the name", `clientState=secret`, `"[redacted]"`},
		{"truncated", `{"value":[{"clientState":"sec`, `"[redacted]"`},
		{"not JSON, without it", `plain text`, `plain text`},
	} {
		got := string(RedactJSONMembers([]byte(tc.in), "clientState"))
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
		if json.Valid([]byte(tc.in)) && !json.Valid([]byte(got)) {
			t.Errorf("%s: valid JSON became invalid: %s", tc.name, got)
		}
	}
}

// FuzzRedactJSONMembers: whatever the body, no clientState value of a
// valid JSON body survives, and valid JSON stays valid.
func FuzzRedactJSONMembers(f *testing.F) {
	f.Add(`{"value":[{"clientState":"s3cret-value","n":1}]}`)
	f.Add(`{"clientState":{"clientState":"s3cret-value"}}`)
	f.Fuzz(func(t *testing.T, in string) {
		out := RedactJSONMembers([]byte(in), "clientState")
		if !json.Valid([]byte(in)) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("valid JSON became invalid: %q -> %q", in, out)
		}
		var check func(v any)
		check = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				for k, x := range v {
					if k == "clientState" && x != "[redacted]" {
						t.Fatalf("clientState shown: %q -> %q", in, out)
					}
					check(x)
				}
			case []any:
				for _, x := range v {
					check(x)
				}
			}
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber() // a valid number need not fit a float64
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		check(v)
	})
}
