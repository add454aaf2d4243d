package webhooks

import "sync/atomic"

// Accepting comes first (docs/reference.md, "Targets"): while many verified ingress
// requests are in progress at once, the delivery workers hold fewer jobs under lease
// (delivery.Config.Busy and Yield), so that accepting events gets the CPU
// and delivery takes what ingest leaves. Deliveries go on at that smaller
// width, and catch up at full width once the burst is over: an accepted
// event is durable already, its delivery can wait a little; a provider
// answered late retries, or gives up.

// busyIngest is how many verified ingress requests in progress at once
// make ingest busy (the ingress counts a request from its verification to
// its answer: a flood of unsigned requests does not slow deliveries). Under it (a steady trickle, a few concurrent providers) deliveries
// run at full width.
const busyIngest = 8

// ingestLoad counts the verified ingress requests in progress, for all
// the app's sources.
type ingestLoad struct{ n atomic.Int64 }

// BeginIngest counts a verified ingress request in progress until its
// EndIngest.
func (a *App) BeginIngest() { a.load.n.Add(1) }

// EndIngest ends what BeginIngest began.
func (a *App) EndIngest() { a.load.n.Add(-1) }

// ingestBusy reports whether ingest is busy (busyIngest).
func (a *App) ingestBusy() bool { return a.load.n.Load() >= busyIngest }
