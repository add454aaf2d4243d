package verifiers

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestNoneVerify(t *testing.T) {
	for _, tc := range []struct {
		name    string
		headers []string
		body    string
	}{
		{name: "no headers, empty body"},
		{name: "any signature", headers: []string{"X-Signature", "garbage"}, body: `{"a":1}`},
		{name: "binary body", body: "\x00\xff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n None
			checkErr(t, n.Verify(newRequest(tc.headers...), []byte(tc.body), time.Time{}), nil)
		})
	}
}

func TestNoneDefaultIDFrom(t *testing.T) {
	got := ruleStrings(None{}.DefaultIDFrom())
	if want := []string{"header Idempotency-Key"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("DefaultIDFrom() = %v, want %v", got, want)
	}
}

func TestNoneUnmarshalCaddyfile(t *testing.T) {
	for _, tc := range []struct {
		input   string
		wantErr bool
	}{
		{input: `none`},
		{input: "none {\n}"},
		{input: `none secret`, wantErr: true},
		{input: "none {\n secret s\n}", wantErr: true},
	} {
		var n None
		err := n.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: error %v, want error: %v", tc.input, err, tc.wantErr)
		}
	}
}

func TestNoneModule(t *testing.T) {
	ctx := testContext(t)
	v, err := ctx.LoadModuleByID("webhooks.verifiers.none", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.(Verifier); !ok {
		t.Fatalf("%T is not a Verifier", v)
	}
	if _, ok := v.(IDDefaulter); !ok {
		t.Fatalf("%T is not an IDDefaulter", v)
	}
	if _, err := ctx.LoadModuleByID("webhooks.verifiers.none", json.RawMessage(`{"secrets":["x"]}`)); err == nil {
		t.Fatal("unknown JSON field accepted")
	}
}
