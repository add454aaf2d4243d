package webhooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/pflag"

	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
)

// retryCmdFlags parses args as `caddy webhooks dlq retry` would.
func retryCmdFlags(t *testing.T, args ...string) caddycmd.Flags {
	t.Helper()
	return cmdFlags(t, retryFlags, args...)
}

// cmdFlags parses args as a subcommand with the flags of add would.
func cmdFlags(t *testing.T, add func(*pflag.FlagSet), args ...string) caddycmd.Flags {
	t.Helper()
	fs := pflag.NewFlagSet("cmd", pflag.ContinueOnError)
	fs.String("address", "", "")
	fs.String("config", "", "")
	fs.String("adapter", "", "")
	fs.Bool("json", false, "")
	add(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return caddycmd.Flags{FlagSet: fs}
}

// TestDLQRetryNeedsIDFilterOrAll: `caddy webhooks dlq retry` with neither
// an id nor a filter refuses (before calling the admin API) unless --all.
func TestDLQRetryNeedsIDFilterOrAll(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, r.Method+" "+r.URL.Path+" "+string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(operator.BulkRetryAnswer{Retried: []string{}, SkippedDelivered: []string{}})
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	for _, args := range [][]string{{}, {"--limit", "10"}} {
		_, err := cmdDLQRetry(retryCmdFlags(t, append([]string{"--address", addr}, args...)...))
		if !errors.Is(err, errRetryNoFilter) {
			t.Fatalf("retry %v: err %v, want a refusal", args, err)
		}
		if !strings.Contains(err.Error(), "--all") {
			t.Errorf("the refusal does not say how to proceed: %v", err)
		}
	}
	mu.Lock()
	if len(bodies) != 0 {
		t.Fatalf("the admin API was called: %v", bodies)
	}
	mu.Unlock()

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--all"}, `"source":""`},
		{[]string{"--source", "stripe"}, `"source":"stripe"`},
		{[]string{"--status", "investigating"}, `"status":"investigating"`},
		{[]string{"--since", "1h"}, `"since":"1h"`},
		{[]string{"--dry-run"}, `"dry_run":true`},
		{[]string{"--destination", "billing"}, `"destination":"billing"`},
		{[]string{"--tenant", "shop-1.myshopify.com"}, `"tenant":"shop-1.myshopify.com"`},
		{[]string{"--source", "stripe", "--destination", "default"}, `"source":"stripe","destination":"default"`},
		{[]string{"--all", "--cursor", "c1"}, `"cursor":"c1"`},
	} {
		mu.Lock()
		bodies = nil
		mu.Unlock()
		if _, err := cmdDLQRetry(retryCmdFlags(t, append([]string{"--address", addr, "--json"}, tc.args...)...)); err != nil {
			t.Fatalf("retry %v: %v", tc.args, err)
		}
		mu.Lock()
		if len(bodies) != 1 || !strings.HasPrefix(bodies[0], "POST /webhooks/dlq/retry ") || !strings.Contains(bodies[0], tc.want) {
			t.Errorf("retry %v: admin calls %v, want one bulk retry with %s", tc.args, bodies, tc.want)
		}
		mu.Unlock()
	}
}

// TestReplayCommand: the flags of `caddy webhooks replay` become its
// request body, sent to the replay route.
func TestReplayCommand(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+r.URL.Path+" "+string(b))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(operator.ReplayAnswer{Replayed: []operator.ReplayedEvent{}})
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		args []string
		want operator.ReplayRequest
	}{
		{nil, operator.ReplayRequest{}},
		{[]string{"--source", "stripe"}, operator.ReplayRequest{Source: "stripe"}},
		{[]string{"--type", "charge.succeeded"}, operator.ReplayRequest{Type: "charge.succeeded"}},
		{[]string{"--tenant", "acct_1"}, operator.ReplayRequest{Tenant: "acct_1"}},
		{[]string{"--since", "24h", "--until", "2026-01-02T03:04:05Z"}, operator.ReplayRequest{Since: "24h", Until: "2026-01-02T03:04:05Z"}},
		{[]string{"--limit", "7"}, operator.ReplayRequest{Limit: 7}},
		{[]string{"--cursor", "c1"}, operator.ReplayRequest{Cursor: "c1"}},
		{[]string{"--dry-run"}, operator.ReplayRequest{DryRun: true}},
		{[]string{"--destination", "billing"}, operator.ReplayRequest{Destination: "billing"}},
		{[]string{"--destination", "default", "--source", "s"}, operator.ReplayRequest{Source: "s", Destination: "default"}},
		{[]string{"--source", "s", "--type", "t", "--since", "1h", "--limit", "1000", "--dry-run"},
			operator.ReplayRequest{Source: "s", Type: "t", Since: "1h", Limit: 1000, DryRun: true}},
	} {
		got = nil
		if _, err := cmdReplay(cmdFlags(t, replayFlags, append([]string{"--address", addr, "--json"}, tc.args...)...)); err != nil {
			t.Fatalf("replay %v: %v", tc.args, err)
		}
		body, _ := json.Marshal(tc.want)
		if want := "POST /webhooks/events/replay " + string(body); len(got) != 1 || got[0] != want {
			t.Errorf("replay %v: admin calls %q, want %q", tc.args, got, want)
		}
	}
}

// TestPrintEvent: `caddy webhooks events` shows an event of one delivery
// as before, and an event of several one row per destination (status,
// attempts, next attempt, finish) and each attempt with its destination.
func TestPrintEvent(t *testing.T) {
	at := time.Date(2026, 11, 22, 14, 20, 5, 0, time.UTC)
	next := at.Add(time.Minute)
	for _, tc := range []struct {
		name       string
		info       storage.EventInfo
		want, lack []string
	}{
		{
			name: "one delivery",
			info: storage.EventInfo{ID: "01a", EventID: "evt_1", Source: "stripe", Status: storage.StatusDelivered, ReceivedAt: at,
				Attempts: []storage.Attempt{{N: 1, At: at, Status: 200, Duration: 3 * time.Millisecond}}},
			want: []string{"evt_1", "ATTEMPT", "200", "3ms"},
			lack: []string{"DESTINATION"},
		},
		{
			name: "several deliveries",
			info: storage.EventInfo{ID: "01a", EventID: "evt_2", Source: "stripe", Status: storage.StatusQueued, ReceivedAt: at, NextAttempt: next,
				Deliveries: []storage.DeliveryInfo{
					{Destination: "default", ID: "01a", Status: storage.StatusDelivered, FinishedAt: at,
						Attempts: []storage.Attempt{{N: 1, At: at, Status: 200}}},
					{Destination: "billing", ID: "01a~billing", Status: storage.StatusQueued, NextAttempt: next,
						Attempts: []storage.Attempt{{N: 1, At: at, Status: 503, Error: "upstream answered 503"}, {N: 2, At: at, Status: 503}}},
				}},
			want: []string{"DESTINATION  STATUS     ATTEMPTS", "default      delivered  1", "billing      queued     2",
				"01a~billing", fmtTime(next), "billing      2        ", "upstream answered 503"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
			printEvent(tw, &tc.info)
			tw.Flush()
			for _, w := range tc.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, buf.String())
				}
			}
			for _, l := range tc.lack {
				if strings.Contains(buf.String(), l) {
					t.Errorf("output has %q:\n%s", l, buf.String())
				}
			}
		})
	}
}

// TestPrintStatsStore: `caddy webhooks stats` shows the store's state and
// the node's spool when it has one; a store that did not answer shows no
// queue (its counts are unknown, not zero).
func TestPrintStatsStore(t *testing.T) {
	oldest := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		v          operator.StatsAnswer
		want, lack []string
	}{
		{"no spool, store up", operator.StatsAnswer{Store: operator.StoreState{Available: true}, Queue: storage.Counts{Queued: 7}},
			[]string{"QUEUED", "7"}, []string{"STORE", "SPOOL"}},
		{"spool empty, store up", operator.StatsAnswer{Store: operator.StoreState{Available: true}, Spool: &operator.SpoolInfo{}},
			[]string{"STORE SPOOLED EVENTS", "available 0 ", "QUEUED"}, []string{"UNAVAILABLE"}},
		{"spooling, store down", operator.StatsAnswer{Spool: &operator.SpoolInfo{Events: 42, Bytes: 4096, Oldest: oldest},
			Sources: map[string]operator.SourceStats{}},
			[]string{"UNAVAILABLE 42 ", "4096", oldest.Local().Format(time.RFC3339), "did not answer"}, []string{"QUEUED", "SOURCE"}},
		{"no spool, store down", operator.StatsAnswer{},
			[]string{"UNAVAILABLE -"}, []string{"QUEUED"}},
		{"signature failures, store down too", operator.StatsAnswer{SignatureFailures: map[string][]operator.SignatureFailure{
			"stripe": {{At: oldest, Reason: "timestamp", SkewSeconds: ptr(int64(-600)), ClientIP: "203.0.113.9"}, {At: oldest, Reason: "mismatch", ClientIP: "203.0.113.9"}}}},
			[]string{"SIGNATURE FAILURES (this node) AT REASON SKEW CLIENT", "stripe " + oldest.Local().Format(time.RFC3339) + " timestamp -600s 203.0.113.9",
				"stripe " + oldest.Local().Format(time.RFC3339) + " mismatch - 203.0.113.9"}, []string{"QUEUED"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
			printStats(tw, &tc.v)
			tw.Flush()
			out := strings.Join(strings.Fields(buf.String()), " ") // the columns' widths aside
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, buf.String())
				}
			}
			for _, l := range tc.lack {
				if strings.Contains(out, l) {
					t.Errorf("output has %q:\n%s", l, buf.String())
				}
			}
		})
	}
}

// TestPrintStatsDestinations: `caddy webhooks stats` lists each source's
// deliveries by destination, sorted, when any were counted.
func TestPrintStatsDestinations(t *testing.T) {
	v := operator.StatsAnswer{Store: operator.StoreState{Available: true}, Sources: map[string]operator.SourceStats{
		"shop": {Destinations: map[string]operator.DestinationStats{
			"default": {LastHour: operator.DestinationCounts{Delivered: 5}, AllTime: operator.DestinationCounts{Delivered: 50, Dead: 1}},
			"billing": {LastHour: operator.DestinationCounts{Delivered: 4, Dead: 2}, AllTime: operator.DestinationCounts{Delivered: 40, Dead: 3}},
		}},
		"quiet": {},
	}}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 1, ' ', 0)
	printStats(tw, &v)
	tw.Flush()
	out := buf.String()
	i := strings.Index(out, "DESTINATION")
	if i < 0 {
		t.Fatalf("no destinations table:\n%s", out)
	}
	rows := strings.Split(strings.TrimSpace(out[i:]), "\n")
	want := []string{"shop   billing     4              2         40              3", "shop   default     5              0         50              1"}
	if len(rows) != 3 || strings.TrimSpace(rows[1]) != want[0] || strings.TrimSpace(rows[2]) != want[1] {
		t.Errorf("destinations table:\n%s\nwant rows %q", out[i:], want)
	}
	buf.Reset()
	tw = tabwriter.NewWriter(&buf, 0, 0, 1, ' ', 0)
	printStats(tw, &operator.StatsAnswer{Store: operator.StoreState{Available: true}, Sources: map[string]operator.SourceStats{"quiet": {}}})
	tw.Flush()
	if !strings.Contains(buf.String(), "quiet") || strings.Contains(buf.String(), "DESTINATION") {
		t.Errorf("a destinations table with none counted:\n%s", buf.String())
	}
}

// TestPrintPauses: `caddy webhooks stats` lists the pauses, a tenant's
// with its tenant.
func TestPrintPauses(t *testing.T) {
	v := operator.StatsAnswer{Store: operator.StoreState{Available: true}, PausedSources: []string{"gh"}, Pauses: []operator.PauseInfo{
		{Source: "gh", Mode: "refuse", Reason: "deploy"},
		{Source: "shop", Tenant: "big.myshopify.com", Mode: "hold", Accept: true, Waiting: 12}}}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 1, ' ', 0)
	printStats(tw, &v)
	tw.Flush()
	out := buf.String()
	i := strings.Index(out, "PAUSED DESTINATION")
	if i < 0 {
		t.Fatalf("no pauses table:\n%s", out)
	}
	rows := strings.Split(strings.TrimSpace(out[i:]), "\n")
	want := []string{"PAUSED DESTINATION TENANT            MODE   SINCE UNTIL WAITING REASON",
		"gh     -           -                 refuse -     -     0       deploy",
		"shop   -           big.myshopify.com hold   -     -     12      -"}
	if len(rows) < 3 || !slices.Equal(rows[:3], want) {
		t.Errorf("pauses table:\n%s\nwant\n%s", out[i:], strings.Join(want, "\n"))
	}
}

// TestPrintTenants: `caddy webhooks stats` lists each source's busiest
// tenants in the API's order ("(other)" last), none when none were counted.
func TestPrintTenants(t *testing.T) {
	sources := map[string]operator.SourceStats{
		"shop": {Tenants: []operator.TenantStats{{Tenant: "big.myshopify.com", TypeCounts: operator.TypeCounts{Received: 9, Delivered: 8, Dead: 1}},
			{Tenant: operator.OtherTenant, TypeCounts: operator.TypeCounts{Received: 3, Delivered: 3}}}},
		"quiet": {},
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 1, ' ', 0)
	printTenants(tw, sources, []string{"quiet", "shop"})
	tw.Flush()
	rows := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{"SOURCE TENANT            RECEIVED (1H) DELIVERED (1H) DEAD (1H)",
		"shop   big.myshopify.com 9             8              1", "shop   (other)           3             3              0"}
	if !slices.Equal(rows, want) {
		t.Errorf("tenants table:\n%s\nwant\n%s", buf.String(), strings.Join(want, "\n"))
	}
	buf.Reset()
	printTenants(&buf, map[string]operator.SourceStats{"quiet": {}}, []string{"quiet"})
	if buf.Len() != 0 {
		t.Errorf("a tenants table with none counted: %q", buf.String())
	}
}

// TestPrintSecrets: the secrets table says which secret of a source last
// matched and how long ago, the never-used one "never", in position order.
func TestPrintSecrets(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	sources := map[string]operator.SourceStats{
		"stripe": {Secrets: []operator.SecretStats{
			{Position: 1, LastMatched: now.Add(-74 * time.Hour), MatchesAllTime: 900},
			{Position: 2, LastMatched: now.Add(-5 * time.Second), MatchesLastHour: 12, MatchesAllTime: 40},
			{Position: 3},
		}},
		"quiet": {},
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 1, ' ', 0)
	printSecrets(tw, sources, []string{"quiet", "stripe"}, now)
	tw.Flush()
	rows := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(rows) != 4 || !strings.HasPrefix(rows[0], "SOURCE") {
		t.Fatalf("secrets table:\n%s", buf.String())
	}
	for i, want := range []string{"1 of 3 3d ago (", "2 of 3 5s ago (", "3 of 3 never"} {
		if row := strings.Join(strings.Fields(rows[i+1]), " "); !strings.HasPrefix(row, "stripe "+want) {
			t.Errorf("row %d: %q, want it to start with %q", i+1, row, "stripe "+want)
		}
	}
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{-time.Second, "0s"}, {59 * time.Second, "59s"}, {61 * time.Minute, "1h"}, {47 * time.Hour, "47h"}, {49 * time.Hour, "2d"}} {
		if got := ago(tc.d); got != tc.want {
			t.Errorf("ago(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestEraseCommand: `caddy webhooks erase <source> <event_id>` sends
// DELETE to the event's route (names escaped), prints what was removed,
// and fails with the API's error for an unknown event.
func TestEraseCommand(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.EscapedPath())
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/unknown") {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(operator.ErrorAnswer{Error: "not found"})
			return
		}
		_ = json.NewEncoder(w).Encode(operator.EraseAnswer{Erased: true, Source: "stripe", EventID: "evt 1/x", ID: "01a",
			Deliveries: 3, DLQEntries: 1, DedupeUntil: time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)})
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	noFlags := func(*pflag.FlagSet) {}
	if _, err := cmdErase(cmdFlags(t, noFlags, "--address", addr, "stripe", "evt 1/x")); err != nil {
		t.Fatalf("erase: %v", err)
	}
	if len(got) != 1 || got[0] != "DELETE /webhooks/events/stripe/evt%201%2Fx" {
		t.Errorf("admin calls %q, want one DELETE of the event", got)
	}
	if _, err := cmdErase(cmdFlags(t, noFlags, "--address", addr, "stripe", "unknown")); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("erase of an unknown event: %v, want the API's 404", err)
	}

	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 1, ' ', 0)
	printErase(tw, &operator.EraseAnswer{Erased: true, Source: "stripe", EventID: "evt_1", ID: "01a", Deliveries: 3, DLQEntries: 1,
		DedupeUntil: time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)})
	tw.Flush()
	for _, w := range []string{"stripe/evt_1", "01a", "deliveries removed  3", "DLQ entries removed 1", "status erased"} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, buf.String())
		}
	}
}

// TestEventsListCommand: the flags of `caddy webhooks events list` become
// the query of GET /webhooks/events, and its table shows one row per
// event with each destination's status.
func TestEventsListCommand(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(storage.EventPage{Events: []storage.EventInfo{}})
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "GET /webhooks/events?"},
		{[]string{"--source", "stripe", "--type", "charge.succeeded"}, "GET /webhooks/events?source=stripe&type=charge.succeeded"},
		{[]string{"--tenant", "shop-1.myshopify.com"}, "GET /webhooks/events?tenant=shop-1.myshopify.com"},
		{[]string{"--destination", "billing", "--status", "dead", "--limit", "5"}, "GET /webhooks/events?destination=billing&limit=5&status=dead"},
		{[]string{"--since", "24h", "--until", "1h", "--id", "evt_1", "--cursor", "abc"}, "GET /webhooks/events?cursor=abc&q=evt_1&since=24h&until=1h"},
	} {
		got = nil
		if _, err := cmdEventsList(cmdFlags(t, eventsListFlags, append([]string{"--address", addr, "--json"}, tc.args...)...)); err != nil {
			t.Fatalf("events list %v: %v", tc.args, err)
		}
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("events list %v: admin calls %v, want [%s]", tc.args, got, tc.want)
		}
	}

	at := time.Date(2026, 11, 23, 9, 0, 0, 0, time.Local)
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 1, ' ', 0)
	printEvents(tw, &storage.EventPage{NextCursor: "c2", Events: []storage.EventInfo{
		{ID: "i-1", EventID: "evt_1", Source: "stripe", EventType: "charge.succeeded", Tenant: "acct_1", Status: storage.StatusDead, ReceivedAt: at,
			Deliveries: []storage.DeliveryInfo{{Destination: "default", Status: storage.StatusDelivered}, {Destination: "billing", Status: storage.StatusDead}}},
		{ID: "i-2", EventID: "evt_2", Source: "github", Status: storage.StatusQueued, ReceivedAt: at, Attempts: []storage.Attempt{{N: 1}}},
	}})
	tw.Flush()
	for _, want := range []string{
		"2026-11-23 09:00:00 stripe evt_1    charge.succeeded acct_1 dead   default=delivered,billing=dead 0        i-1",
		"2026-11-23 09:00:00 github evt_2    -                -      queued default=queued                 1        i-2",
		"more: --cursor c2",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestRekeyCommand: `caddy webhooks rekey --wait` starts the rekey, then
// follows it until it is no longer running; a failed rekey is an error.
func TestRekeyCommand(t *testing.T) {
	rekeyPoll = time.Millisecond
	defer func() { rekeyPoll = time.Second }()
	var got, bodies []string
	final := "done"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path)
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		w.Header().Set("Content-Type", "application/json")
		a := operator.RekeyAnswer{State: "running", KeyID: "0a1b2c3d", Scanned: len(got)}
		if len(got) >= 3 {
			a.State, a.Resealed = final, 7
			if final == "failed" {
				a.Error = "redis down"
			}
		}
		if r.Method == "POST" {
			w.WriteHeader(http.StatusAccepted)
			a.Started = true
		}
		_ = json.NewEncoder(w).Encode(a)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	flags := func(fs *pflag.FlagSet) {
		fs.Bool("wait", false, "")
		fs.Bool("status", false, "")
		fs.Int("batch", 0, "")
		fs.Duration("pause", 0, "")
	}
	if _, err := cmdRekey(cmdFlags(t, flags, "--address", addr, "--wait")); err != nil {
		t.Fatalf("rekey --wait: %v", err)
	}
	if want := []string{"POST /webhooks/rekey", "GET /webhooks/rekey", "GET /webhooks/rekey"}; !slices.Equal(got, want) {
		t.Errorf("admin calls %q, want %q", got, want)
	}
	if bodies[0] != "" {
		t.Errorf("a rekey without --batch or --pause sent %q, want no body", bodies[0])
	}
	got, bodies = nil, nil
	if _, err := cmdRekey(cmdFlags(t, flags, "--address", addr, "--batch", "20", "--pause", "1.5s")); err != nil {
		t.Fatalf("rekey --batch --pause: %v", err)
	}
	if len(bodies) != 1 || bodies[0] != `{"batch":20,"pause":"1.5s"}` {
		t.Errorf("rekey --batch 20 --pause 1.5s sent %q", bodies)
	}
	got, final = nil, "failed"
	if _, err := cmdRekey(cmdFlags(t, flags, "--address", addr, "--wait")); err == nil || !strings.Contains(err.Error(), "redis down") {
		t.Errorf("a failed rekey: %v", err)
	}
	got = nil
	if _, err := cmdRekey(cmdFlags(t, flags, "--address", addr, "--status")); err != nil || len(got) != 1 || got[0] != "GET /webhooks/rekey" {
		t.Errorf("rekey --status: %q, %v", got, err)
	}

	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 1, ' ', 0)
	printRekey(tw, &operator.RekeyAnswer{State: "done", KeyID: "0a1b2c3d", Scanned: 10, Resealed: 7})
	tw.Flush()
	for _, w := range []string{"state        done", "0a1b2c3d", "re-encrypted 7"} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, buf.String())
		}
	}
}
