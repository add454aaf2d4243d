package embedded_test

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestListingsWithoutIndexValues: a file written before the DLQ and
// finished indexes kept values lists the same entries (each read in full).
func TestListingsWithoutIndexValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookline.db")
	st, err := embedded.Open(path, embedded.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	storagetest.LoadFinished(t, st, 120, 64, storage.Dead)
	storagetest.LoadFinished(t, st, 120, 64, storage.Delivered)
	want := storagetest.ListingsOf(t, st)
	st.Close()
	if err := embedded.RewriteWithoutIndexValues(path); err != nil {
		t.Fatal(err)
	}
	st, err = embedded.Open(path, embedded.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got := storagetest.ListingsOf(t, st)
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if !slices.Equal(got[name], want[name]) {
			t.Errorf("%s: %d listed without index values, %d with", name, len(got[name]), len(want[name]))
		}
	}
	if len(want["dlq all"]) != 120 || len(want["replay all"]) != 120 || len(want["dlq source"]) != 30 {
		t.Errorf("the model lists %d dead, %d delivered, %d of src1; want 120, 120, 30", len(want["dlq all"]), len(want["replay all"]), len(want["dlq source"]))
	}
}
