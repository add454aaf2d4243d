package embedded_test

import (
	"testing"
	"time"

	"github.com/hookline/hookline/storage"
	"github.com/hookline/hookline/storage/embedded"
	"github.com/hookline/hookline/storage/storagetest"
)

// TestOptionsNowIsTheClock: the store reads Options.Now wherever it reads
// the clock itself (storagetest.RunClock).
func TestOptionsNowIsTheClock(t *testing.T) {
	storagetest.RunClock(t, func(t *testing.T, now func() time.Time) storage.Store {
		return openWithOptions(t, embedded.Options{Now: now})
	})
}
