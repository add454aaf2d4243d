package webhooks

import (
	"fmt"
	"io"
	"time"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	"github.com/hookline/hookline/internal/operator"
)

// rekeyPoll is how often `caddy webhooks rekey --wait` reads the progress.
var rekeyPoll = time.Second

// cmdRekey is `caddy webhooks rekey`: POST /webhooks/rekey with --batch
// and --pause as its pace (or, with --status, GET), then with --wait GET
// until the rekey is no longer running, printing its progress.
func cmdRekey(fl caddycmd.Flags) (int, error) {
	method, body := "POST", any(nil)
	if fl.Bool("status") {
		method = "GET"
	} else if batch, pause := fl.Int("batch"), fl.Duration("pause"); batch != 0 || pause != 0 {
		req := operator.RekeyRequest{Batch: batch}
		if pause != 0 {
			req.Pause = pause.String()
		}
		body = req
	}
	raw, err := adminCall(fl, method, "/webhooks/rekey", body)
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	raw, err = followTask(fl, raw, "/webhooks/rekey", rekeyPoll, func(v *operator.RekeyAnswer) string { return v.State },
		func(v *operator.RekeyAnswer) string {
			return fmt.Sprintf("rekey running: %d scanned, %d re-encrypted", v.Scanned, v.Resealed)
		})
	if err != nil {
		return caddy.ExitCodeFailedStartup, err
	}
	var v operator.RekeyAnswer
	code, err := output(fl, raw, &v, func(w io.Writer) { printRekey(w, &v) })
	if err == nil && v.State == "failed" {
		return caddy.ExitCodeFailedStartup, fmt.Errorf("rekey failed: %s", v.Error)
	}
	return code, err
}

// printRekey is the table of `caddy webhooks rekey`.
func printRekey(w io.Writer, v *operator.RekeyAnswer) {
	fmt.Fprintf(w, "state\t%s\nkey id\t%s\nscanned\t%d\nre-encrypted\t%d\nfailed\t%d\n",
		v.State, orDash(v.KeyID), v.Scanned, v.Resealed, v.Failed)
	fmt.Fprintf(w, "started\t%s\nfinished\t%s\n", orDash(fmtTime(v.StartedAt)), orDash(fmtTime(v.FinishedAt)))
	if v.Error != "" {
		fmt.Fprintf(w, "error\t%s\n", v.Error)
	}
}
