package webhooks

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hookline/hookline/internal/delivery"
)

// TestQueueCollectorStoreDown: a node that cannot reach the store reports
// caddy_webhooks_store_up 0 and no queue sizes (it cannot know them);
// no breaker is reported before an upstream is tried (delivery's
// TestBreakersStates tests the states).
func TestQueueCollectorStoreDown(t *testing.T) {
	br := delivery.NewBreakers(1, time.Hour, nil)
	a := &App{shared: &sharedStore{closed: true}, breakers: br}
	want := `
# HELP caddy_webhooks_store_up Whether this node reached the webhook store at scrape time (1) or not (0).
# TYPE caddy_webhooks_store_up gauge
caddy_webhooks_store_up 0
`
	if err := testutil.CollectAndCompare(&queueCollector{app: a}, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(&queueCollector{app: a}, "caddy_webhooks_queue_depth", "caddy_webhooks_dlq_entries"); n != 0 {
		t.Fatalf("%d queue series from a node without its store", n)
	}
}
