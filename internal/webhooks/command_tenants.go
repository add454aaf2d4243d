package webhooks

import (
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/hookline/hookline/internal/operator"
)

// tenantsCommand is `caddy webhooks tenants`: erase a tenant and show
// the progress of its erasure; pause and resume a tenant.
func tenantsCommand() *cobra.Command {
	tenants := &cobra.Command{Use: "tenants", Short: "Acts on one tenant (customer account) of a source"}
	erase := &cobra.Command{Use: "erase <source> <tenant>",
		Short: "Erases every event of a tenant received until now (GDPR), in the background: resumable, paced (--wait follows it to the end)",
		Args:  cobra.ExactArgs(2), RunE: caddycmd.WrapCommandFuncForCobra(cmdTenantErase("DELETE"))}
	erase.Flags().Bool("wait", false, "Wait until the erasure is done, printing its progress")
	erase.Flags().Int("batch", 0, "Events erased a batch (default 100, at most 500)")
	erase.Flags().Duration("pause", 0, "Wait between batches, so that the erasure takes only a share of a busy store (at most 10s)")
	status := &cobra.Command{Use: "status <source> <tenant>", Short: "Shows the progress of the running or last erasure of a tenant",
		Args: cobra.ExactArgs(2), RunE: caddycmd.WrapCommandFuncForCobra(cmdTenantErase("GET"))}
	status.Flags().Bool("wait", false, "Wait until the erasure is done, printing its progress")
	pause := &cobra.Command{Use: "pause <source> <tenant>",
		Short: "Pauses a tenant: its deliveries wait while the other tenants' go; its new events are refused (503, the default) or held (--accept: 202 and stored); pausing again changes the pause",
		Args:  cobra.ExactArgs(2), RunE: caddycmd.WrapCommandFuncForCobra(cmdPause("pause", true))}
	pause.Flags().String("reason", "", "Why, shown wherever the pause is")
	pause.Flags().String("for", "", "Resume by itself after this duration (e.g. 30m)")
	pause.Flags().Bool("accept", false, "Hold: keep accepting and storing the tenant's events while its deliveries wait")
	resume := &cobra.Command{Use: "resume <source> <tenant>", Short: "Resumes a paused tenant; its waiting deliveries go, taking turns with the other tenants'",
		Args: cobra.ExactArgs(2), RunE: caddycmd.WrapCommandFuncForCobra(cmdPause("resume", true))}
	tenants.AddCommand(erase, status, pause, resume)
	return tenants
}

// tenantPoll is how often `caddy webhooks tenants erase --wait` reads the
// progress.
var tenantPoll = time.Second

// cmdTenantErase is `caddy webhooks tenants erase` (DELETE, with --batch
// and --pause as its pace) or `status` (GET) on
// /webhooks/tenants/<source>/<tenant>, then with --wait GET until the
// erasure is no longer running, printing its progress.
func cmdTenantErase(method string) caddycmd.CommandFunc {
	return func(fl caddycmd.Flags) (int, error) {
		uri := "/webhooks/tenants/" + url.PathEscape(fl.Arg(0)) + "/" + url.PathEscape(fl.Arg(1))
		var body any
		if method == "DELETE" {
			if batch, pause := fl.Int("batch"), fl.Duration("pause"); batch != 0 || pause != 0 {
				req := operator.TenantEraseRequest{Batch: batch}
				if pause != 0 {
					req.Pause = pause.String()
				}
				body = req
			}
		}
		raw, err := adminCall(fl, method, uri, body)
		if err != nil {
			return caddy.ExitCodeFailedStartup, err
		}
		raw, err = followTask(fl, raw, uri, tenantPoll, func(v *operator.TenantErasureAnswer) string { return v.State },
			func(v *operator.TenantErasureAnswer) string {
				return fmt.Sprintf("erasure running: %d events erased", v.Erased)
			})
		if err != nil {
			return caddy.ExitCodeFailedStartup, err
		}
		var v operator.TenantErasureAnswer
		code, err := output(fl, raw, &v, func(w io.Writer) { printTenantErasure(w, &v) })
		if err == nil && v.State == "failed" {
			return caddy.ExitCodeFailedStartup, fmt.Errorf("the erasure stopped: %s", v.Error)
		}
		return code, err
	}
}

// printTenantErasure is the table of `caddy webhooks tenants erase`.
func printTenantErasure(w io.Writer, v *operator.TenantErasureAnswer) {
	fmt.Fprintf(w, "source\t%s\ntenant\t%s\nstate\t%s\nreceived until\t%s\n", v.Source, v.Tenant, v.State, fmtTime(v.Until))
	fmt.Fprintf(w, "erased\t%d events (%d deliveries, %d DLQ entries)\nreached\t%s\n", v.Erased, v.Deliveries, v.DLQEntries,
		orDash(fmtTime(v.Reached)))
	fmt.Fprintf(w, "started\t%s\nfinished\t%s\n", orDash(fmtTime(v.StartedAt)), orDash(fmtTime(v.FinishedAt)))
	if v.Error != "" {
		fmt.Fprintf(w, "error\t%s\n", v.Error)
	}
}
