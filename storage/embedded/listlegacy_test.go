package embedded_test

import (
	"path/filepath"
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
	storagetest.SameListings(t, want, storagetest.ListingsOf(t, st), 120, 120)
}
