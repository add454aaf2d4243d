package operator

import (
	"errors"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/hookline/hookline/internal/httpjson"
	"github.com/hookline/hookline/storage"
)

// loggerName names the logger of the API's failures, as Caddy names the
// admin API's.
const loggerName = "admin.api.webhooks"

// apiError is an error answer: its status and the text the client sees.
type apiError struct {
	status int
	msg    string
	code   string // "": none
}

func (e *apiError) Error() string { return e.msg }

func newError(status int, msg string) *apiError { return &apiError{status: status, msg: msg} }

var (
	errMethodNotAllowed = newError(http.StatusMethodNotAllowed, "method not allowed")
	errTooLarge         = newError(http.StatusRequestEntityTooLarge, "request body too large")
	errInternal         = newError(http.StatusInternalServerError, "internal error")
)

// answer writes v with 200 through httpjson, the one JSON writer; the
// error return lets handlers end with it.
func answer(w http.ResponseWriter, v any) error {
	httpjson.Write(w, http.StatusOK, v)
	return nil
}

// fail answers err: an apiError as it is, anything else as an App error
// (storeError).
func fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = storeError(err)
	}
	if c := logger().Check(zap.DebugLevel, "request refused"); c != nil {
		c.Write(zap.String("method", r.Method), zap.String("path", r.URL.Path),
			zap.Int("status", ae.status), zap.String("error", ae.msg))
	}
	httpjson.Write(w, ae.status, ErrorAnswer{Error: ae.msg, Code: ae.code})
}

// storeError maps an error of the app's operations to an answer without
// leaking internals: the store's errors to 404, 409 and 400; anything
// else, logged, to 503.
func storeError(err error) *apiError {
	switch {
	case errors.Is(err, storage.ErrDLQNotFound), errors.Is(err, storage.ErrNotFound):
		return newError(http.StatusNotFound, "not found")
	case errors.Is(err, storage.ErrConflict), errors.Is(err, storage.ErrSpooled):
		return newError(http.StatusConflict, err.Error())
	case errors.Is(err, storage.ErrInvalidCursor):
		return newError(http.StatusBadRequest, "invalid cursor")
	case errors.Is(err, storage.ErrKeyMissing):
		// the message names the key by its id, never the key
		return &apiError{status: http.StatusConflict, msg: err.Error(), code: CodeKeyMissing}
	case errors.Is(err, ErrTooManyErasures):
		return newError(http.StatusTooManyRequests, err.Error())
	case errors.Is(err, storage.ErrNoKey):
		return &apiError{status: http.StatusConflict, msg: err.Error(), code: CodeEncryptionDisabled}
	}
	logger().Error("store operation failed", zap.Error(err))
	return newError(http.StatusServiceUnavailable, "webhook store unavailable")
}

// appError maps a failed app lookup: 404 when no app runs, else 500.
func appError(err error) *apiError {
	if errors.Is(err, ErrNotRunning) {
		return newError(http.StatusNotFound, ErrNotRunning.Error())
	}
	logger().Error("looking up the webhooks app", zap.Error(err))
	return errInternal
}

// logger is the API's logger, looked up at each use: Caddy's default
// logger changes with the config.
func logger() *zap.Logger { return caddy.Log().Named(loggerName) }
