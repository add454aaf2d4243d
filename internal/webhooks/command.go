package webhooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/hookline/hookline/internal/operator"
	"github.com/hookline/hookline/storage"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "webhooks",
		Usage: "stats | dlq list|show|retry|resolve|discard | pause|resume <source> | events list | events <source> <event_id> | erase <source> <event_id> | replay | rekey",
		Short: "Inspects hookline's queue and dead letter queue through the admin API",
		Long: `
Talks to the webhooks routes of a running Caddy's admin API.

  caddy webhooks stats [--from 24h] [--to 1h] [--source S] [--type T]
                                     (with a window: the counters over it, by source with health)
  caddy webhooks dlq list [--source S] [--destination D] [--type T] [--status pending] [--since 24h] [--until 1h] [--limit 50] [--cursor C]
  caddy webhooks dlq show <id>
  caddy webhooks dlq retry <id>
  caddy webhooks dlq retry --source S [--destination D] [--type T] [--status pending] [--since 24h] [--limit 100] [--cursor C] [--dry-run]
  caddy webhooks dlq retry --all [--limit 100] [--cursor C] [--dry-run]    (pending entries, --limit a call)
  caddy webhooks dlq resolve <id> [--resolution "replayed by hand"]
  caddy webhooks dlq discard <id> [--reason "test event"]
  caddy webhooks pause <source>      (its ingress answers 503, deliveries wait)
  caddy webhooks resume <source>
  caddy webhooks events list [--source S] [--destination D] [--type T] [--status dead] [--since 24h] [--until 1h] [--id ID] [--limit 50] [--cursor C]
                                     (every stored event, newest first, whatever its status)
  caddy webhooks events <source> <event_id>
  caddy webhooks erase <source> <event_id>
                                     (GDPR: removes the event, its deliveries, DLQ entries and stored body;
                                      its id stays claimed, so a resend is still answered as a duplicate)
  caddy webhooks replay [--source S] [--destination D] [--type T] [--since 24h] [--until 1h] [--limit 100] [--cursor C] [--dry-run]
                                     (re-sends delivered events, oldest first, paced, in their own lane)
  caddy webhooks rekey [--wait] [--status] [--batch N] [--pause 50ms]
                                     (re-encrypts every stored record under the first encryption_key, in the
                                      background on one node; resumable, safe under traffic)

Output is a table for humans; --json prints the API's JSON for scripts.
The admin address is ` + caddy.DefaultAdminListen + ` unless --address is given or
--config (with --adapter) names the config to read it from, as with caddy reload.`,
		CobraFunc: func(cmd *cobra.Command) {
			pf := cmd.PersistentFlags()
			pf.String("address", "", "Address of the administration API listener (if --config is not used)")
			pf.StringP("config", "c", "", "Configuration file (if --address is not used)")
			pf.StringP("adapter", "a", "", "Name of config adapter to apply (if --config is used)")
			pf.Bool("json", false, "Print JSON instead of a table")

			statsCmd := &cobra.Command{
				Use:   "stats",
				Short: "Shows the queue: queued, in flight, dead; with --from, --to, --source or --type the counters over that window",
				Args:  cobra.NoArgs,
				RunE:  caddycmd.WrapCommandFuncForCobra(cmdStats),
			}
			rangeFlags(statsCmd)
			cmd.AddCommand(statsCmd)
			dlqCmd := &cobra.Command{Use: "dlq", Short: "Lists and acts on dead-lettered events"}
			list := &cobra.Command{
				Use:   "list",
				Short: "Lists DLQ entries, newest first",
				Args:  cobra.NoArgs,
				RunE:  caddycmd.WrapCommandFuncForCobra(cmdDLQList),
			}
			list.Flags().String("source", "", "Only this source")
			list.Flags().String("destination", "", "Only this destination's entries (default: every destination)")
			list.Flags().String("type", "", "Only this event type (exactly)")
			list.Flags().String("tenant", "", "Only this tenant's entries (exactly)")
			list.Flags().String("status", "", "pending, investigating, resolved, discarded or retried")
			list.Flags().String("since", "", "RFC 3339 time or a duration (24h)")
			list.Flags().String("until", "", "Dead-lettered at or before: RFC 3339 time or a duration ago")
			list.Flags().Int("limit", 0, "At most this many entries (default 50)")
			list.Flags().String("cursor", "", "Next page: the cursor printed by the previous one")
			show := &cobra.Command{Use: "show <id>", Short: "Shows one entry with its payload and attempts",
				Args: cobra.ExactArgs(1), RunE: caddycmd.WrapCommandFuncForCobra(cmdDLQShow)}
			retry := &cobra.Command{Use: "retry [<id>]", Short: "Re-enqueues one entry, or every entry matching the filters (or --all), with a fresh attempt budget",
				Args: cobra.MaximumNArgs(1), RunE: caddycmd.WrapCommandFuncForCobra(cmdDLQRetry)}
			retryFlags(retry.Flags())
			resolve := &cobra.Command{Use: "resolve <id>", Short: "Marks an entry resolved",
				Args: cobra.ExactArgs(1), RunE: caddycmd.WrapCommandFuncForCobra(cmdDLQAction("resolve", "resolution"))}
			resolve.Flags().String("resolution", "", "What was done")
			discard := &cobra.Command{Use: "discard <id>", Short: "Discards an entry",
				Args: cobra.ExactArgs(1), RunE: caddycmd.WrapCommandFuncForCobra(cmdDLQAction("discard", "reason"))}
			discard.Flags().String("reason", "", "Why")
			dlqCmd.AddCommand(list, show, retry, resolve, discard)
			cmd.AddCommand(dlqCmd)
			pause := &cobra.Command{Use: "pause <source>",
				Short: "Pauses a source or one destination: refuse (503, the default) or hold (--accept: 202 and stored, deliveries wait); pausing again changes the pause",
				Args:  cobra.ExactArgs(1), RunE: caddycmd.WrapCommandFuncForCobra(cmdPause("pause", false))}
			pause.Flags().String("destination", "", "Pause this destination's deliveries only (they always hold)")
			pause.Flags().String("reason", "", "Why, shown wherever the pause is")
			pause.Flags().String("for", "", "Resume by itself after this duration (e.g. 30m)")
			pause.Flags().Bool("accept", false, "Hold: keep accepting and storing events while deliveries wait")
			resume := &cobra.Command{Use: "resume <source>", Short: "Resumes a paused source or destination; its waiting deliveries go, paced",
				Args: cobra.ExactArgs(1), RunE: caddycmd.WrapCommandFuncForCobra(cmdPause("resume", false))}
			resume.Flags().String("destination", "", "Resume this destination's deliveries")
			cmd.AddCommand(pause, resume)
			events := &cobra.Command{
				Use:   "events <source> <event_id>",
				Short: "Shows where an event is, with its attempts (events list: lists events)",
				Args:  cobra.ExactArgs(2),
				RunE:  caddycmd.WrapCommandFuncForCobra(cmdEvent),
			}
			eventsList := &cobra.Command{Use: "list", Short: "Lists stored events, newest first, whatever their status",
				Args: cobra.NoArgs, RunE: caddycmd.WrapCommandFuncForCobra(cmdEventsList)}
			eventsListFlags(eventsList.Flags())
			events.AddCommand(eventsList)
			cmd.AddCommand(events)
			cmd.AddCommand(&cobra.Command{
				Use:   "erase <source> <event_id>",
				Short: "Erases an event for good (GDPR): its deliveries, DLQ entries and stored body; its id stays claimed",
				Args:  cobra.ExactArgs(2),
				RunE:  caddycmd.WrapCommandFuncForCobra(cmdErase),
			})
			replay := &cobra.Command{Use: "replay", Short: "Re-sends events already delivered (within retention), paced, in their own lane",
				Args: cobra.NoArgs, RunE: caddycmd.WrapCommandFuncForCobra(cmdReplay)}
			replayFlags(replay.Flags())
			cmd.AddCommand(replay)
			rekey := &cobra.Command{Use: "rekey", Short: "Re-encrypts every stored record under the first encryption_key (resumable; --wait follows it to the end)",
				Args: cobra.NoArgs, RunE: caddycmd.WrapCommandFuncForCobra(cmdRekey)}
			rekey.Flags().Bool("wait", false, "Wait until the rekey is done, printing its progress")
			rekey.Flags().Bool("status", false, "Only show the progress of the running or last rekey")
			rekey.Flags().Int("batch", 0, "Records re-encrypted per step, each one write transaction (default 200, at most 5000)")
			rekey.Flags().Duration("pause", 0, "Wait between steps, so that the rekey takes only a share of a busy store (at most 10s)")
			cmd.AddCommand(rekey)
			cmd.AddCommand(tenantsCommand())
		},
	})
}

// adminCall sends a request to the admin API and returns the body.
func adminCall(fl caddycmd.Flags, method, uri string, body any) ([]byte, error) {
	addr, err := caddycmd.DetermineAdminAPIAddress(fl.String("address"), nil, fl.String("config"), fl.String("adapter"))
	if err != nil {
		return nil, fmt.Errorf("couldn't determine admin API address: %v", err)
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	resp, err := caddycmd.AdminAPIRequest(addr, method, uri, nil, rd)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(io.LimitReader(resp.Body, 64<<20))
}

// followTask is --wait on a background task (a rekey, a tenant's
// erasure): while its state in the answer raw is running, it reads the
// task's progress again (GET uri) every poll, printing line's account of
// it on stderr (not with --json). It returns the last answer.
func followTask[T any](fl caddycmd.Flags, raw []byte, uri string, poll time.Duration,
	state func(*T) string, line func(*T) string) ([]byte, error) {
	for fl.Bool("wait") {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("decoding the answer: %v", err)
		}
		if state(&v) != "running" {
			break
		}
		if !fl.Bool("json") {
			fmt.Fprintln(os.Stderr, line(&v))
		}
		time.Sleep(poll)
		var err error
		if raw, err = adminCall(fl, "GET", uri, nil); err != nil {
			return nil, err
		}
	}
	return raw, nil
}

// output prints raw JSON with --json, else calls table.
func output(fl caddycmd.Flags, raw []byte, v any, table func(w io.Writer)) (int, error) {
	if fl.Bool("json") {
		var buf bytes.Buffer
		if err := json.Indent(&buf, raw, "", "  "); err != nil {
			return caddy.ExitCodeFailedStartup, fmt.Errorf("decoding answer: %v", err)
		}
		fmt.Println(buf.String())
		return 0, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return caddy.ExitCodeFailedStartup, fmt.Errorf("decoding answer: %v", err)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	table(tw)
	tw.Flush()
	return 0, nil
}

func cmdStats(fl caddycmd.Flags) (int, error) {
	if q := rangeQuery(fl); len(q) > 0 {
		return cmdRangeStats(fl, q)
	}
	raw, err := adminCall(fl, "GET", "/webhooks/stats", nil)
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	var v operator.StatsAnswer
	return output(fl, raw, &v, func(w io.Writer) { printStats(w, &v) })
}

// printStats is the table of `caddy webhooks stats`: the store's state
// and this node's spool (when it has one, or the store did not answer),
// the queue, each source's queue and counters, each source's deliveries
// by destination and busiest tenants, and this node's recent signature
// failures.
func printStats(w io.Writer, v *operator.StatsAnswer) {
	defer printSignatureFailures(w, v.SignatureFailures)
	if !v.Store.Available || v.Spool != nil {
		store := "available"
		if !v.Store.Available {
			store = "UNAVAILABLE"
		}
		fmt.Fprintln(w, "STORE\tSPOOLED EVENTS\tSPOOL BYTES\tOLDEST SPOOLED")
		if sp := v.Spool; sp != nil {
			fmt.Fprintf(w, "%s\t%d\t%d\t%s\n\n", store, sp.Events, sp.Bytes, timeOrDash(sp.Oldest))
		} else {
			fmt.Fprintf(w, "%s\t-\t-\t-\n\n", store)
		}
		if !v.Store.Available {
			// the queue and the counters are in the store: none to show
			fmt.Fprintln(w, "The store did not answer: queue and counters are unknown until it does; events accepted meanwhile wait in the spool.")
			return
		}
	}
	fmt.Fprintln(w, "QUEUED\tIN FLIGHT\tDEAD (open DLQ entries)\tPAUSED")
	paused := strings.Join(v.PausedSources, ",")
	if paused == "" {
		paused = "-"
	}
	fmt.Fprintf(w, "%d\t%d\t%d\t%s\n", v.Queue.Queued, v.Queue.InFlight, v.Queue.Dead, paused)
	if len(v.Pauses) > 0 {
		fmt.Fprintln(w, "\nPAUSED\tDESTINATION\tTENANT\tMODE\tSINCE\tUNTIL\tWAITING\tREASON")
		for _, p := range v.Pauses {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", p.Source, orDash(p.Destination), orDash(p.Tenant), p.Mode,
				timeOrDash(p.Since), timeOrDash(p.Until), p.Waiting, orDash(p.Reason))
		}
	}
	if len(v.Sources) == 0 {
		return
	}
	names := slices.Sorted(maps.Keys(v.Sources))
	fmt.Fprintln(w, "\nSOURCE\tQUEUED\tIN FLIGHT\tDLQ OPEN")
	for _, n := range names {
		q := v.Sources[n].Queue
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\n", n, q.Queued, q.InFlight, q.Dead)
	}
	fmt.Fprintln(w, "\nSOURCE\tWINDOW\tRECEIVED\tDUPLICATES\tREJECTED\tDELIVERED\tDEAD\tSUCCESS\tDLQ RATE\tAVG ATTEMPTS")
	pct := func(f *float64) string {
		if f == nil {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100**f)
	}
	num := func(f *float64) string {
		if f == nil {
			return "-"
		}
		return fmt.Sprintf("%.2f", *f)
	}
	for _, n := range names {
		for _, row := range []struct {
			label string
			s     operator.WindowStats
		}{{"last hour", v.Sources[n].LastHour}, {"all time", v.Sources[n].AllTime}} {
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", n, row.label, row.s.Received, row.s.Duplicates,
				row.s.Rejected, row.s.Delivered, row.s.Dead, pct(row.s.SuccessRate), pct(row.s.DLQRate), num(row.s.AvgAttempts))
		}
	}
	header := false
	for _, n := range names {
		dests := v.Sources[n].Destinations
		for _, d := range slices.Sorted(maps.Keys(dests)) {
			if !header {
				fmt.Fprintln(w, "\nSOURCE\tDESTINATION\tDELIVERED (1H)\tDEAD (1H)\tDELIVERED (ALL)\tDEAD (ALL)")
				header = true
			}
			ds := dests[d]
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\n", n, d, ds.LastHour.Delivered, ds.LastHour.Dead, ds.AllTime.Delivered, ds.AllTime.Dead)
		}
	}
	printTenants(w, v.Sources, names)
	printSecrets(w, v.Sources, names, time.Now())
}

// printTenants lists each source's busiest tenants of the last hour, and
// "(other)" for the rest.
func printTenants(w io.Writer, sources map[string]operator.SourceStats, names []string) {
	header := false
	for _, n := range names {
		for _, t := range sources[n].Tenants {
			if !header {
				fmt.Fprintln(w, "\nSOURCE\tTENANT\tRECEIVED (1H)\tDELIVERED (1H)\tDEAD (1H)")
				header = true
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\n", n, t.Tenant, t.Received, t.Delivered, t.Dead)
		}
	}
}

// printSecrets lists which secret of each source verified its requests
// and when each last did ("secret 2 of 2 last matched 3d ago"), so that an
// operator rotating one sees when the old one can go.
func printSecrets(w io.Writer, sources map[string]operator.SourceStats, names []string, now time.Time) {
	header := false
	for _, n := range names {
		list := sources[n].Secrets
		for _, s := range list {
			if !header {
				fmt.Fprintln(w, "\nSOURCE\tSECRET\tLAST MATCHED\tMATCHES (1H)\tMATCHES (ALL)")
				header = true
			}
			last := "never"
			if !s.LastMatched.IsZero() {
				last = ago(now.Sub(s.LastMatched)) + " ago (" + timeOrDash(s.LastMatched) + ")"
			}
			fmt.Fprintf(w, "%s\t%d of %d\t%s\t%d\t%d\n", n, s.Position, len(list), last, s.MatchesLastHour, s.MatchesAllTime)
		}
	}
}

// ago is a duration as an operator reads it: its largest unit, rounded
// down (45s, 12m, 5h, 3d).
func ago(d time.Duration) string {
	switch d = max(d, 0); {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}

// printSignatureFailures lists the last failed signature checks of each
// source on the node asked, newest first.
func printSignatureFailures(w io.Writer, all map[string][]operator.SignatureFailure) {
	if len(all) == 0 {
		return
	}
	fmt.Fprintln(w, "\nSIGNATURE FAILURES (this node)\tAT\tREASON\tSKEW\tCLIENT")
	for _, src := range slices.Sorted(maps.Keys(all)) {
		for _, f := range all[src] {
			skew := "-"
			if f.SkewSeconds != nil {
				skew = fmt.Sprintf("%+ds", *f.SkewSeconds)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", src, timeOrDash(f.At), f.Reason, skew, orDash(f.ClientIP))
		}
	}
}

func cmdDLQList(fl caddycmd.Flags) (int, error) {
	q := url.Values{}
	for _, name := range []string{"source", "destination", "type", "tenant", "status", "since", "until", "cursor"} {
		if v := fl.String(name); v != "" {
			q.Set(name, v)
		}
	}
	if n := fl.Int("limit"); n > 0 {
		q.Set("limit", fmt.Sprint(n))
	}
	uri := "/webhooks/dlq"
	if len(q) > 0 {
		uri += "?" + q.Encode()
	}
	raw, err := adminCall(fl, "GET", uri, nil)
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	var page storage.DLQPage
	return output(fl, raw, &page, func(w io.Writer) {
		fmt.Fprintln(w, "ID\tSOURCE\tDESTINATION\tEVENT ID\tTYPE\tTENANT\tSTATUS\tLAST\tATTEMPTS\tCREATED\tERROR")
		for _, e := range page.Entries {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", e.ID, e.Source,
				storage.DestinationOf(&storage.Event{Destination: e.Destination}), e.EventID, orDash(e.EventType), orDash(e.Tenant), e.Status,
				e.LastStatus, len(e.Attempts), e.CreatedAt.Local().Format(time.DateTime), oneLine(e.Error, 60))
		}
		if len(page.Entries) == 0 {
			fmt.Fprintln(w, "(no entries)")
		}
		if page.NextCursor != "" {
			fmt.Fprintf(w, "\nmore: --cursor %s\n", page.NextCursor)
		}
	})
}

// eventsListFlags are the flags of `caddy webhooks events list`.
func eventsListFlags(fs *pflag.FlagSet) {
	fs.String("source", "", "Only this source")
	fs.String("destination", "", "Only events with a delivery to this destination")
	fs.String("type", "", "Only this event type (exactly)")
	fs.String("tenant", "", "Only this tenant's events (exactly)")
	fs.String("status", "", "queued, in_flight, delivered or dead (with --destination: that delivery's)")
	fs.String("since", "", "Received at or after: RFC 3339 time or a duration ago (24h)")
	fs.String("until", "", "Received at or before: RFC 3339 time or a duration ago")
	fs.String("id", "", "Only events whose internal or provider id starts with this")
	fs.Int("limit", 0, "At most this many events (default 50, at most 500)")
	fs.String("cursor", "", "Next page: the cursor printed by the previous one")
}

// cmdEventsList lists events through GET /webhooks/events: one row per
// event, its destinations with their statuses.
func cmdEventsList(fl caddycmd.Flags) (int, error) {
	q := url.Values{}
	for _, name := range []string{"source", "destination", "type", "tenant", "status", "since", "until", "cursor"} {
		if v := fl.String(name); v != "" {
			q.Set(name, v)
		}
	}
	if v := fl.String("id"); v != "" {
		q.Set("q", v)
	}
	if n := fl.Int("limit"); n > 0 {
		q.Set("limit", fmt.Sprint(n))
	}
	uri := "/webhooks/events"
	if len(q) > 0 {
		uri += "?" + q.Encode()
	}
	raw, err := adminCall(fl, "GET", uri, nil)
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	var page storage.EventPage
	return output(fl, raw, &page, func(w io.Writer) { printEvents(w, &page) })
}

// printEvents is the table of `caddy webhooks events list`.
func printEvents(w io.Writer, page *storage.EventPage) {
	fmt.Fprintln(w, "RECEIVED\tSOURCE\tEVENT ID\tTYPE\tTENANT\tSTATUS\tDESTINATIONS\tATTEMPTS\tID")
	for _, e := range page.Events {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", fmtTime(e.ReceivedAt), e.Source, e.EventID,
			orDash(e.EventType), orDash(e.Tenant), e.Status, destinationStatuses(&e), len(e.Attempts), e.ID)
	}
	if len(page.Events) == 0 {
		fmt.Fprintln(w, "(no events)")
	}
	if page.NextCursor != "" {
		fmt.Fprintf(w, "\nmore: --cursor %s\n", page.NextCursor)
	}
}

// destinationStatuses shows each delivery of an event as
// destination=status ("default=delivered,billing=dead").
func destinationStatuses(e *storage.EventInfo) string {
	if len(e.Deliveries) == 0 {
		return storage.DestinationOf(&storage.Event{Destination: e.Destination}) + "=" + string(e.Status)
	}
	parts := make([]string, len(e.Deliveries))
	for i, d := range e.Deliveries {
		parts[i] = d.Destination + "=" + string(d.Status)
	}
	return strings.Join(parts, ",")
}

func cmdDLQShow(fl caddycmd.Flags) (int, error) {
	id := fl.Arg(0)
	raw, err := adminCall(fl, "GET", "/webhooks/dlq/"+url.PathEscape(id), nil)
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	var e operator.EntryView
	return output(fl, raw, &e, func(w io.Writer) {
		fmt.Fprintf(w, "id\t%s\nsource\t%s\ndestination\t%s\nevent id\t%s\ntype\t%s\nstatus\t%s\nupstream\t%s\nerror\t%s\nreceived\t%s\ndead-lettered\t%s\n",
			e.ID, e.Source, storage.DestinationOf(&storage.Event{Destination: e.Destination}), e.EventID, orDash(e.EventType), e.Status, e.Upstream, e.Error,
			e.ReceivedAt.Local().Format(time.DateTime), e.CreatedAt.Local().Format(time.DateTime))
		if e.Tenant != "" {
			fmt.Fprintf(w, "tenant\t%s\n", e.Tenant)
		}
		if e.Resolution != "" {
			fmt.Fprintf(w, "resolution\t%s\n", e.Resolution)
		}
		if e.Reason != "" {
			fmt.Fprintf(w, "reason\t%s\n", e.Reason)
		}
		fmt.Fprintln(w, "\nATTEMPT\tAT\tSTATUS\tDURATION\tERROR")
		for _, a := range e.Attempts {
			fmt.Fprintf(w, "%d\t%s\t%d\t%s\t%s\n", a.N, a.At.Local().Format(time.DateTime), a.Status, a.Duration.Round(time.Millisecond), a.Error)
		}
		fmt.Fprintf(w, "\npayload (%s):\n%s\n", e.PayloadEncoding, e.Payload)
	})
}

// cmdDLQAction posts to /webhooks/dlq/<id>/<action> with the optional
// text flag as the JSON body field of the same name.
func cmdDLQAction(action, field string) caddycmd.CommandFunc {
	return func(fl caddycmd.Flags) (int, error) {
		id := fl.Arg(0)
		var body any
		if field != "" {
			body = map[string]string{field: fl.String(field)}
		}
		raw, err := adminCall(fl, "POST", "/webhooks/dlq/"+url.PathEscape(id)+"/"+action, body)
		if err != nil {
			return caddy.ExitCodeFailedStartup, err
		}
		var v operator.StatusAnswer
		return output(fl, raw, &v, func(w io.Writer) {
			fmt.Fprintf(w, "%s: %s\n", v.ID, v.Status)
		})
	}
}

// retryFlags defines the flags of `caddy webhooks dlq retry`.
func retryFlags(fs *pflag.FlagSet) {
	fs.String("source", "", "Bulk: only this source")
	fs.String("destination", "", "Bulk: only this destination's entries (default: the source's forward_to; unset: every destination)")
	fs.String("type", "", "Bulk: only this event type (exactly)")
	fs.String("tenant", "", "Bulk: only this tenant's entries (exactly)")
	fs.String("status", "", "Bulk: entries in this status (default pending)")
	fs.String("since", "", "Bulk: entries dead-lettered since (RFC 3339 or 24h)")
	fs.Int("limit", 0, "Bulk: at most this many (default 100)")
	fs.String("cursor", "", "Bulk: go on where the previous call stopped (the cursor it printed)")
	fs.Bool("dry-run", false, "Bulk: only show what would be re-enqueued")
	fs.Bool("all", false, "Bulk: allow a retry with no filter: up to --limit entries in the status (default pending, 100 a call; for more, run again with the --cursor it printed)")
}

// errRetryNoFilter refuses a bulk retry that names nothing to select by.
var errRetryNoFilter = errors.New("dlq retry: give an entry id, a filter (--source, --destination, --type, --tenant, --status, --since), " +
	"or --all to re-enqueue pending entries with no filter, --limit a call (--dry-run shows which)")

// bulkRetryFromFlags builds the bulk retry request of the flags. With no
// id and no filter it refuses unless --all (or --dry-run, which changes
// nothing) is given: a bare `dlq retry` must not redrive the whole DLQ.
func bulkRetryFromFlags(fl caddycmd.Flags) (operator.BulkRetryRequest, error) {
	req := operator.BulkRetryRequest{Source: fl.String("source"), Destination: fl.String("destination"), Type: fl.String("type"),
		Tenant: fl.String("tenant"), Status: fl.String("status"), Since: fl.String("since"), Limit: fl.Int("limit"), Cursor: fl.String("cursor"), DryRun: fl.Bool("dry-run")}
	if req.Source == "" && req.Destination == "" && req.Type == "" && req.Tenant == "" && req.Status == "" && req.Since == "" && !fl.Bool("all") && !req.DryRun {
		return req, errRetryNoFilter
	}
	return req, nil
}

// cmdDLQRetry retries one entry by id, or in bulk by filter.
func cmdDLQRetry(fl caddycmd.Flags) (int, error) {
	if fl.NArg() == 1 {
		return cmdDLQAction("retry", "")(fl)
	}
	req, err := bulkRetryFromFlags(fl)
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	raw, err := adminCall(fl, "POST", "/webhooks/dlq/retry", req)
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	var res operator.BulkRetryAnswer
	return output(fl, raw, &res, func(w io.Writer) {
		verb := "re-enqueued"
		if res.DryRun {
			verb = "would re-enqueue"
		}
		fmt.Fprintf(w, "matched %d; %s %d; skipped %d delivered meanwhile; %d failed\n",
			res.Matched, verb, len(res.Retried), len(res.SkippedDelivered), len(res.Failed))
		for _, id := range res.Retried {
			fmt.Fprintln(w, "  "+id)
		}
		printFailedAndSpread(w, res.Failed, res.Spread, res.NextCursor)
	})
}

// printFailedAndSpread ends the table of a bulk action: what failed and
// why, how long the re-enqueued events are spread over, and the cursor
// that goes on where the call stopped.
func printFailedAndSpread(w io.Writer, failed map[string]string, spread, next string) {
	for id, msg := range failed {
		fmt.Fprintf(w, "  failed %s: %s\n", id, msg)
	}
	if spread != "" {
		fmt.Fprintf(w, "spread over %s\n", spread)
	}
	if next != "" {
		fmt.Fprintf(w, "\nmore: --cursor %s\n", next)
	}
}

// replayFlags are the flags of `caddy webhooks replay`.
func replayFlags(fs *pflag.FlagSet) {
	fs.String("source", "", "Only this source")
	fs.String("destination", "", "Only the deliveries to this destination (default: the source's forward_to; unset: every destination)")
	fs.String("type", "", "Only this event type (exactly)")
	fs.String("tenant", "", "Only this tenant's events (exactly)")
	fs.String("since", "", "Events delivered since (RFC 3339 or 24h)")
	fs.String("until", "", "Events delivered until (RFC 3339 or 1h: that long ago)")
	fs.Int("limit", 0, "At most this many (default 100, at most 1000)")
	fs.String("cursor", "", "Go on where the previous call stopped (the cursor it printed)")
	fs.Bool("dry-run", false, "Only name the events that would be replayed")
}

// replayFromFlags builds the replay request of the flags.
func replayFromFlags(fl caddycmd.Flags) operator.ReplayRequest {
	return operator.ReplayRequest{Source: fl.String("source"), Destination: fl.String("destination"), Type: fl.String("type"),
		Tenant: fl.String("tenant"), Since: fl.String("since"), Until: fl.String("until"), Limit: fl.Int("limit"), Cursor: fl.String("cursor"), DryRun: fl.Bool("dry-run")}
}

// cmdReplay re-sends delivered events matching the flags.
func cmdReplay(fl caddycmd.Flags) (int, error) {
	raw, err := adminCall(fl, "POST", "/webhooks/events/replay", replayFromFlags(fl))
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	var res operator.ReplayAnswer
	return output(fl, raw, &res, func(w io.Writer) {
		verb := "replayed"
		if res.DryRun {
			verb = "would replay"
		}
		fmt.Fprintf(w, "matched %d; %s %d; %d failed\n", res.Matched, verb, len(res.Replayed), len(res.Failed))
		for _, ev := range res.Replayed {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", ev.ID, ev.Source, orDash(ev.Destination), ev.EventID, orDash(ev.Type))
		}
		printFailedAndSpread(w, res.Failed, res.Spread, res.NextCursor)
	})
}

// cmdPause is `caddy webhooks pause|resume <source>` (with --destination,
// one destination's) and, tenant true, `caddy webhooks tenants
// pause|resume <source> <tenant>`.
func cmdPause(action string, tenant bool) caddycmd.CommandFunc {
	return func(fl caddycmd.Flags) (int, error) {
		uri := "/webhooks/sources/" + url.PathEscape(fl.Arg(0))
		if tenant {
			uri = "/webhooks/tenants/" + url.PathEscape(fl.Arg(0)) + "/" + url.PathEscape(fl.Arg(1))
		} else if d := fl.String("destination"); d != "" {
			uri += "/destinations/" + url.PathEscape(d)
		}
		var body any
		if action == "pause" {
			body = operator.PauseRequest{Reason: fl.String("reason"), For: fl.String("for"), Accept: fl.Bool("accept")}
		}
		raw, err := adminCall(fl, "POST", uri+"/"+action, body)
		if err != nil {
			return caddy.ExitCodeFailedStartup, err
		}
		var v operator.PauseAnswer
		return output(fl, raw, &v, func(w io.Writer) {
			what := v.Source
			switch {
			case v.Destination != "":
				what += " → " + v.Destination
			case v.Tenant != "":
				what += " tenant " + v.Tenant
			}
			switch {
			case v.Pause != nil:
				fmt.Fprintf(w, "%s: paused (%s)%s\n", what, v.Pause.Mode, pauseDetails(*v.Pause))
			case v.Resumed != nil:
				fmt.Fprintf(w, "%s: resumed\n", what)
			default:
				fmt.Fprintf(w, "%s: was not paused\n", what)
			}
		})
	}
}

// pauseDetails is a pause's reason and end for the CLI's lines.
func pauseDetails(p operator.PauseInfo) string {
	var s string
	if !p.Until.IsZero() {
		s += " until " + p.Until.Local().Format(time.RFC3339)
	}
	if p.Reason != "" {
		s += ": " + p.Reason
	}
	return s
}

func cmdEvent(fl caddycmd.Flags) (int, error) {
	raw, err := adminCall(fl, "GET", "/webhooks/events/"+url.PathEscape(fl.Arg(0))+"/"+url.PathEscape(fl.Arg(1)), nil)
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	var info storage.EventInfo
	return output(fl, raw, &info, func(w io.Writer) { printEvent(w, &info) })
}

// cmdErase erases an event through DELETE /webhooks/events/<source>/<event_id>.
func cmdErase(fl caddycmd.Flags) (int, error) {
	raw, err := adminCall(fl, "DELETE", "/webhooks/events/"+url.PathEscape(fl.Arg(0))+"/"+url.PathEscape(fl.Arg(1)), nil)
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	var v operator.EraseAnswer
	return output(fl, raw, &v, func(w io.Writer) { printErase(w, &v) })
}

// printErase is the table of `caddy webhooks erase`.
func printErase(w io.Writer, v *operator.EraseAnswer) {
	fmt.Fprintf(w, "erased\t%s/%s\nid\t%s\ndeliveries removed\t%d\nDLQ entries removed\t%d\n",
		v.Source, v.EventID, v.ID, v.Deliveries, v.DLQEntries)
	if v.DedupeUntil.IsZero() {
		fmt.Fprintln(w, "resends\tno claim kept (a resend would be stored again)")
		return
	}
	fmt.Fprintf(w, "resends\tanswered as duplicates (status erased) until %s\n", fmtTime(v.DedupeUntil))
}

// printEvent is the table of `caddy webhooks events`: the event, then
// for an event with several deliveries one row per destination, then
// every attempt (with its destination when there are several).
func printEvent(w io.Writer, info *storage.EventInfo) {
	fmt.Fprintf(w, "id\t%s\nsource\t%s\nevent id\t%s\ntype\t%s\nstatus\t%s\nreceived\t%s\n",
		info.ID, info.Source, info.EventID, orDash(info.EventType), info.Status, fmtTime(info.ReceivedAt))
	if info.Tenant != "" {
		fmt.Fprintf(w, "tenant\t%s\n", info.Tenant)
	}
	if !info.NextAttempt.IsZero() {
		fmt.Fprintf(w, "next attempt\t%s\n", fmtTime(info.NextAttempt))
	}
	if len(info.Deliveries) == 0 {
		fmt.Fprintln(w, "\nATTEMPT\tAT\tSTATUS\tDURATION\tERROR")
		for _, a := range info.Attempts {
			fmt.Fprintf(w, "%d\t%s\t%d\t%s\t%s\n", a.N, fmtTime(a.At), a.Status, a.Duration.Round(time.Millisecond), oneLine(a.Error, 60))
		}
		return
	}
	fmt.Fprintln(w, "\nDESTINATION\tSTATUS\tATTEMPTS\tNEXT ATTEMPT\tFINISHED\tDELIVERY ID")
	for _, d := range info.Deliveries {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\t%s\n", d.Destination, d.Status, len(d.Attempts),
			orDash(fmtTime(d.NextAttempt)), orDash(fmtTime(d.FinishedAt)), d.ID)
	}
	fmt.Fprintln(w, "\nDESTINATION\tATTEMPT\tAT\tSTATUS\tDURATION\tERROR")
	for _, d := range info.Deliveries {
		for _, a := range d.Attempts {
			fmt.Fprintf(w, "%s\t%d\t%s\t%d\t%s\t%s\n", d.Destination, a.N, fmtTime(a.At), a.Status,
				a.Duration.Round(time.Millisecond), oneLine(a.Error, 60))
		}
	}
}

// fmtTime shows a time in a table, in local time ("" for the zero time).
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format(time.DateTime)
}

// orDash shows an empty value as "-" in a table.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string, max int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > max {
		s = s[:max-1] + "…"
	}
	return s
}

// timeOrDash is t for the CLI's tables, "-" when zero.
func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.RFC3339)
}
