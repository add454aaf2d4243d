package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/storage/embedded/kv"
)

// TestUpgradeFromBoltFile: a user upgrading from a version that kept the
// embedded store in one bbolt file starts the new binary on the same
// Caddyfile: the file at the configured path is moved into a store
// directory there, and every event it held (accepted, never delivered:
// the upstream was down) is delivered.
func TestUpgradeFromBoltFile(t *testing.T) {
	dir := t.TempDir()
	tr := newTracker(t)
	tr.hang.Store(true)
	adminP, httpP := freePort(t), freePort(t)
	cfg := writeConfig(t, dir, adminP, httpP, tr.URL, "", "")
	n1 := startNode(t, dir, cfg, adminP, httpP)
	acked := send(sendOpts{ports: []int{httpP}, prefix: "up", n: 300, conc: 8})
	if len(acked) != 300 {
		t.Fatalf("%d of 300 events acknowledged; logs:\n%s", len(acked), n1.logs)
	}
	n1.kill()

	// the store as an earlier version kept it: the same buckets in a
	// bbolt file at the configured path
	store := filepath.Join(dir, "events.db")
	file := filepath.Join(dir, "earlier.db")
	if err := kv.ExportToBolt(store, file); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(store); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(file, store); err != nil {
		t.Fatal(err)
	}

	tr.hang.Store(false)
	close(tr.release)
	n2 := startNode(t, dir, cfg, adminP, httpP)
	dups := waitDelivered(t, tr, acked, 60*time.Second)
	if fi, err := os.Stat(store); err != nil || !fi.IsDir() {
		t.Fatalf("the store at %s is not a directory after the upgrade: %v", store, err)
	}
	for _, left := range []string{".new", ".bbolt"} {
		if _, err := os.Stat(store + left); err == nil {
			t.Errorf("%s left beside the store", filepath.Base(store+left))
		}
	}
	n2.kill() // its logs are read once it is gone
	if !strings.Contains(n2.logs.String(), "moved the embedded store from its bbolt file") {
		t.Errorf("no log line says the store was moved:\n%s", n2.logs)
	}
	t.Logf("the %d events of the bbolt file were delivered after the upgrade (%d duplicates)", len(acked), dups)
}
