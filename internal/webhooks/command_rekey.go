package webhooks

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
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
	for fl.Bool("wait") {
		var v operator.RekeyAnswer
		if err := json.Unmarshal(raw, &v); err != nil {
			return caddy.ExitCodeFailedStartup, fmt.Errorf("decoding the answer: %v", err)
		}
		if v.State != "running" {
			break
		}
		if !fl.Bool("json") {
			fmt.Fprintf(os.Stderr, "rekey running: %d scanned, %d re-encrypted\n", v.Scanned, v.Resealed)
		}
		time.Sleep(rekeyPoll)
		if raw, err = adminCall(fl, "GET", "/webhooks/rekey", nil); err != nil {
			return caddy.ExitCodeFailedStartup, err
		}
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
