package operator

import (
	"fmt"
	"net/http"
	"time"

	"github.com/hookline/hookline/internal/httpjson"
	"github.com/hookline/hookline/storage"
)

// Error codes of the encryption at rest.
const (
	// CodeKeyMissing: a record is encrypted under a key that is not
	// configured (the message names its key id).
	CodeKeyMissing = "ENCRYPTION_KEY_MISSING"
	// CodeEncryptionDisabled: a rekey was asked for without a key.
	CodeEncryptionDisabled = "ENCRYPTION_DISABLED"
)

// EncryptionInfo says whether payloads are encrypted at rest (in
// StatsAnswer); it never holds a key.
type EncryptionInfo struct {
	// Enabled is true when bodies and headers are stored encrypted.
	Enabled bool `json:"enabled"`
	// KeyID is the id of the key new records are encrypted under ("":
	// none), the first 4 bytes of its SHA-256 in hex.
	KeyID string `json:"key_id,omitempty"`
	// Keys counts the configured keys (the first encrypts, all decrypt).
	Keys int `json:"keys"`
}

// RekeyAnswer answers POST and GET /webhooks/rekey: the progress of the
// running or last rekey.
type RekeyAnswer struct {
	// State is running, done or failed; "none" when no rekey ever ran.
	State string `json:"state"`
	// Started is true when this POST started (or resumed) the rekey,
	// false when one was running already (and for GET).
	Started bool `json:"started"`
	// KeyID is the id of the key records are re-encrypted under.
	KeyID string `json:"key_id,omitempty"`
	// Scanned counts the records read so far, Resealed those rewritten,
	// Failed those whose key is missing (left as they are).
	Scanned  int `json:"scanned"`
	Resealed int `json:"resealed"`
	Failed   int `json:"failed"`
	// StartedAt, UpdatedAt and FinishedAt are when the rekey began,
	// last saved its progress and ended (absent: not yet).
	StartedAt  time.Time `json:"started_at,omitzero"`
	UpdatedAt  time.Time `json:"updated_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Error says why it failed, or names a record it could not decrypt.
	Error string `json:"error,omitempty"`
}

func rekeyAnswer(p storage.RekeyProgress, started bool) RekeyAnswer {
	state := p.State
	if state == "" {
		state = "none"
	}
	return RekeyAnswer{State: state, Started: started, KeyID: p.KeyID, Scanned: p.Scanned, Resealed: p.Resealed,
		Failed: p.Failed, StartedAt: p.StartedAt, UpdatedAt: p.UpdatedAt, FinishedAt: p.FinishedAt, Error: p.Error}
}

// RekeyRequest is the optional body of POST /webhooks/rekey: how to pace
// the rekey it starts (a running one keeps its own pace).
type RekeyRequest struct {
	// Batch is the number of records re-encrypted per step, each step
	// one write transaction (default 200, at most 5000).
	Batch int `json:"batch,omitempty"`
	// Pause is the wait between steps, a Go duration ("50ms"; default
	// none, at most 10s), so that a rekey on a busy store takes only a
	// share of it.
	Pause string `json:"pause,omitempty"`
}

// options checks req and returns it as storage.RekeyOptions.
func (req RekeyRequest) options() (storage.RekeyOptions, error) {
	o := storage.RekeyOptions{Batch: req.Batch}
	var err error
	if o.Pause, err = parsePause(req.Pause); err != nil {
		return o, err
	}
	if err := o.Validate(); err != nil {
		return o, newError(http.StatusBadRequest, err.Error())
	}
	return o, nil
}

// parsePause reads the pause of a background walk's request (a Go
// duration; "": none).
func parsePause(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, newError(http.StatusBadRequest, fmt.Sprintf("pause: %q is not a duration", s))
	}
	return d, nil
}

// startRekey answers POST /webhooks/rekey: 202 with the rekey it started
// (resumed) in the background, or the one running already; 409
// ENCRYPTION_DISABLED without a key.
func (h *Handler) startRekey(w http.ResponseWriter, r *http.Request) error {
	app, err := h.ready()
	if err != nil {
		return err
	}
	req, err := readStrict[RekeyRequest](r)
	if err != nil {
		return err
	}
	o, err := req.options()
	if err != nil {
		return err
	}
	p, started, err := app.StartRekey(r.Context(), o)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusAccepted, rekeyAnswer(p, started))
	return nil
}

// rekeyStatus answers GET /webhooks/rekey: the running or last rekey.
func (h *Handler) rekeyStatus(w http.ResponseWriter, r *http.Request) error {
	app, err := h.ready()
	if err != nil {
		return err
	}
	p, err := app.RekeyStatus(r.Context())
	if err != nil {
		return err
	}
	return answer(w, rekeyAnswer(p, false))
}
