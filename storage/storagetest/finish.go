package storagetest

import (
	"sync"
	"testing"

	"github.com/hookline/hookline/storage"
)

// FinishAtOnce finishes jobs as delivered from one goroutine each, all
// released together (as workers finish what one lease handed them), and
// fails t on any error: for the backends' tests of how finishes share
// round trips or commits.
func FinishAtOnce(t testing.TB, st storage.Store, jobs []*storage.Job) {
	t.Helper()
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, len(jobs))
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs <- st.Finish(t.Context(), j, storage.Outcome{Result: storage.Delivered})
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Finish: %v", err)
		}
	}
}
