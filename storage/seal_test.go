package storage

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, KeySize) }

func mustKeyring(t *testing.T, keys ...[]byte) *Keyring {
	t.Helper()
	k, err := NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpen(t *testing.T) {
	k1 := mustKeyring(t, testKey(1))
	k21 := mustKeyring(t, testKey(2), testKey(1))
	k2 := mustKeyring(t, testKey(2))
	plain := []byte("the payload")
	sealed := k1.Seal("01ev~billing", plain)
	if !IsSealed(sealed) || SealKeyID(sealed) != KeyID(testKey(1)) || bytes.Contains(sealed, plain) {
		t.Fatalf("sealed %x", sealed)
	}
	if again := k1.Seal("01ev~billing", plain); bytes.Equal(again[1+keyIDSize:sealHeader], sealed[1+keyIDSize:sealHeader]) {
		t.Error("two seals share a nonce")
	}
	tests := []struct {
		name    string
		k       *Keyring
		id      string
		blob    []byte
		wantErr error
	}{
		{"same key", k1, "01ev~billing", sealed, nil},
		{"older key kept", k21, "01ev~billing", sealed, nil},
		{"another delivery of the event", k1, "01ev", sealed, nil},
		{"key removed", k2, "01ev~billing", sealed, ErrKeyMissing},
		{"no keyring", nil, "01ev", sealed, ErrKeyMissing},
		{"another event's record", k1, "02ev", sealed, ErrSealBroken},
		{"truncated", k1, "01ev", sealed[:sealHeader-1], ErrSealBroken},
		{"tampered", k1, "01ev", append(bytes.Clone(sealed[:len(sealed)-1]), sealed[len(sealed)-1]^1), ErrSealBroken},
		{"clear payload record", k1, "01ev", EncodePayload(nil, plain), ErrSealBroken},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.k.Open(tc.id, tc.blob)
			if !errors.Is(err, tc.wantErr) || (err == nil && !bytes.Equal(got, plain)) {
				t.Fatalf("Open = %q, %v; want %v", got, err, tc.wantErr)
			}
			var km *KeyMissingError
			if errors.As(err, &km) && (km.KeyID != KeyID(testKey(1)) || !strings.Contains(err.Error(), km.KeyID)) {
				t.Errorf("the error does not name the key id: %v", err)
			}
		})
	}
	if k21.Current(sealed) || !k1.Current(sealed) {
		t.Error("Current")
	}
}

func TestParseKeys(t *testing.T) {
	key := testKey(7)
	tests := []struct {
		name    string
		in      []string
		wantErr string
	}{
		{"std", []string{base64.StdEncoding.EncodeToString(key)}, ""},
		{"raw url", []string{base64.RawURLEncoding.EncodeToString(key)}, ""},
		{"two", []string{base64.StdEncoding.EncodeToString(key), base64.StdEncoding.EncodeToString(testKey(8))}, ""},
		{"short", []string{base64.StdEncoding.EncodeToString(key[:16])}, "encryption key 1 is not the base64 encoding of 32 bytes"},
		{"not base64", []string{"hunter2-secret!"}, "encryption key 1 is not the base64 encoding of 32 bytes"},
		{"the same twice", []string{base64.StdEncoding.EncodeToString(key), base64.RawStdEncoding.EncodeToString(key)}, "encryption key 2 is the same as key 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, err := ParseKeys(tc.in)
			if tc.wantErr == "" {
				if err != nil || k.Len() != len(tc.in) || k.CurrentID() != KeyID(key) {
					t.Fatalf("ParseKeys = %v, %v", k, err)
				}
				return
			}
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			for _, s := range tc.in {
				if strings.Contains(err.Error(), s) {
					t.Errorf("the error shows a key: %v", err)
				}
			}
		})
	}
}

// TestSealedPayloadRecord: a sealed event's deliveries share its sealed
// blob as their payload record, joined back as each job's Sealed; a
// DLQ entry and its retry carry it; a rekey re-seals each kind of record.
func TestSealedPayloadRecord(t *testing.T) {
	k1 := mustKeyring(t, testKey(1))
	ev := Event{ID: "01ev", Source: "s", EventID: "e", Headers: http.Header{"X-A": {"1"}}, Body: []byte("body")}
	k1.SealEvent(&ev)
	if ev.Body != nil || ev.Headers != nil || ev.Sealed == nil {
		t.Fatalf("sealed event %+v", ev)
	}
	jobs := []Event{ev, ev}
	jobs[1].ID = "01ev~crm"
	payload := SharePayload(jobs, false)
	if !bytes.Equal(payload, ev.Sealed) || jobs[1].Sealed != nil || !jobs[1].SharedPayload {
		t.Fatalf("SharePayload: %x, %+v", payload, jobs[1])
	}
	if err := JoinPayload(&jobs[1], payload); err != nil || !bytes.Equal(jobs[1].Sealed, payload) {
		t.Fatalf("JoinPayload: %v", err)
	}
	job := Job{Event: jobs[1]}
	e := NewDLQEntry(&job, nil, "dead", job.ReceivedAt, nil)
	if err := k1.OpenEntry(e); err != nil || string(e.Payload) != "body" || e.Headers.Get("X-A") != "1" {
		t.Fatalf("OpenEntry: %v %+v", err, e)
	}
	e.Sealed = job.Sealed
	e.Payload, e.Headers = nil, nil
	var retried Event
	OwnEntryPayload(&retried, e)
	if !bytes.Equal(retried.Sealed, job.Sealed) || retried.SharedPayload {
		t.Fatal("OwnEntryPayload dropped the sealed payload")
	}

	k21 := mustKeyring(t, testKey(2), testKey(1))
	if b, err := k21.ResealPayload("01ev", payload); err != nil || SealKeyID(b) != KeyID(testKey(2)) {
		t.Fatalf("ResealPayload: %v", err)
	}
	if b, err := k21.ResealPayload("01ev", EncodePayload(nil, []byte("clear"))); err != nil || !IsSealed(b) {
		t.Fatalf("ResealPayload of a clear record: %v", err)
	}
	if changed, err := k21.ResealEntry(e); err != nil || !changed || SealKeyID(e.Sealed) != KeyID(testKey(2)) {
		t.Fatalf("ResealEntry: %v %v", changed, err)
	}
	if changed, err := k21.ResealEntry(e); err != nil || changed {
		t.Fatalf("ResealEntry under the current key: %v %v", changed, err)
	}
	clear := Event{ID: "03ev", Body: []byte("x")}
	if changed, err := k21.ResealEvent(&clear); err != nil || !changed || clear.Body != nil {
		t.Fatalf("ResealEvent of a clear record: %v %v", changed, err)
	}
	shared := Event{ID: "04ev~crm", SharedPayload: true}
	if changed, _ := k21.ResealEvent(&shared); changed {
		t.Fatal("a job reading its payload record was resealed")
	}
	if _, err := mustKeyring(t, testKey(3)).ResealEvent(&clear); !errors.Is(err, ErrKeyMissing) {
		t.Fatalf("ResealEvent without the key: %v", err)
	}
}
