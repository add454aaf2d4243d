package webhooks

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
)

// TestEncryptionKeysProvision: keys come from placeholders ({env.*},
// {file.*}); the config keeps the placeholders; a key that is not the
// base64 of 32 bytes fails provisioning with an error that does not show
// it; the stats say which key seals (by id), never the key.
func TestEncryptionKeysProvision(t *testing.T) {
	key := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	old := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("o", 32)))
	t.Setenv("HOOKLINE_TEST_KEY", key)
	file := filepath.Join(t.TempDir(), "old.key")
	if err := os.WriteFile(file, []byte(old+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	app, err := provisionApp(t, `{"encryption_keys":["{env.HOOKLINE_TEST_KEY}","{file.`+file+`}"]}`)
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	defer app.Cleanup()
	if app.EncryptionKeys[0] != "{env.HOOKLINE_TEST_KEY}" {
		t.Errorf("the config lost its placeholder: %q", app.EncryptionKeys)
	}
	info := app.Encryption()
	if !info.Enabled || info.Keys != 2 || info.KeyID != storage.KeyID([]byte(strings.Repeat("k", 32))) {
		t.Errorf("Encryption() = %+v", info)
	}

	for _, bad := range []string{
		base64.StdEncoding.EncodeToString([]byte("too short, and secret")),
		"not base64 at all: secret!",
	} {
		t.Setenv("HOOKLINE_TEST_KEY", bad)
		_, err := provisionApp(t, `{"encryption_keys":["{env.HOOKLINE_TEST_KEY}"]}`)
		if err == nil || !strings.Contains(err.Error(), "encryption key 1 is not the base64 encoding of 32 bytes") {
			t.Errorf("key %q: err = %v", bad, err)
		} else if strings.Contains(err.Error(), bad) || strings.Contains(err.Error(), "secret") {
			t.Errorf("the error shows the key: %v", err)
		}
	}
	t.Setenv("HOOKLINE_TEST_KEY", "")
	if _, err := provisionApp(t, `{"encryption_keys":["{env.HOOKLINE_TEST_KEY}"]}`); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("an empty key: err = %v", err)
	}
}

// TestAppStoreSeals: the app's store seals what the app enqueues, opens
// what workers lease, and runs a rekey in the background (a second start
// while it runs returns it), whose progress RekeyStatus reads back.
func TestAppStoreSeals(t *testing.T) {
	t.Setenv("HOOKLINE_TEST_KEY", base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32))))
	app, err := provisionApp(t, `{"encryption_keys":["{env.HOOKLINE_TEST_KEY}"]}`)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Cleanup()
	st, err := app.Store()
	if err != nil {
		t.Fatal(err)
	}
	ss, ok := st.(*storage.SealingStore)
	if !ok {
		t.Fatalf("the app's store is a %T", st)
	}
	ev := &storage.Event{ID: "01-sealed", EventID: "e1", Dedupe: true, Source: "s", Upstream: "http://127.0.0.1:1/",
		Body: []byte("marker-body"), ReceivedAt: time.Now()}
	if _, err := app.enqueue(t.Context(), ev, time.Hour); err != nil {
		t.Fatal(err)
	}
	if string(ev.Body) != "marker-body" {
		t.Error("Enqueue changed the caller's event")
	}
	jobs, err := ss.Unwrap().Lease(t.Context(), time.Now(), 10, time.Minute, nil)
	if err != nil || len(jobs) != 1 || jobs[0].Body != nil || !storage.IsSealed(jobs[0].Sealed) {
		t.Fatalf("the backend's job: %+v, %v", jobs, err)
	}
	if err := ss.Unwrap().Finish(t.Context(), jobs[0], storage.Outcome{Result: storage.Release}); err != nil {
		t.Fatal(err)
	}
	opened, err := st.Lease(t.Context(), time.Now(), 10, time.Minute, nil)
	if err != nil || len(opened) != 1 || string(opened[0].Body) != "marker-body" {
		t.Fatalf("the app's job: %+v, %v", opened, err)
	}

	p, started, err := app.StartRekey(t.Context(), storage.RekeyOptions{})
	if err != nil || !started || p.State != storage.RekeyRunning {
		t.Fatalf("StartRekey = %+v, %v, %v", p, started, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, err = app.RekeyStatus(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if p.State == storage.RekeyDone || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if p.State != storage.RekeyDone || p.Scanned == 0 || p.Resealed != 0 || p.KeyID != app.keys.CurrentID() {
		t.Errorf("rekey = %+v, want done, nothing to reseal", p)
	}
}
