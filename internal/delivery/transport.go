package delivery

import (
	"crypto/tls"
	"net/http"
)

// Transport is the HTTP clients of an upstream with TLS options of its own
// (a source's or a destination's tls_* options): a connection pool of its
// own, so that its client certificate and its trust serve no other
// upstream. Targets without one use the dispatcher's shared client.
type Transport struct {
	client *http.Client
	traced *http.Client // client through otelhttp, for traced events
}

// NewTransport is a Transport whose connections use cfg, its idle pool
// sized for workers (NewClient).
func NewTransport(cfg *tls.Config, workers int) *Transport {
	c := NewClient(workers)
	c.Transport.(*http.Transport).TLSClientConfig = cfg
	return &Transport{client: c, traced: tracedClient(c)}
}

// Close closes the transport's idle connections, once the config that
// made it is unloaded; a delivery still in flight finishes.
func (t *Transport) Close() {
	if t != nil {
		t.client.CloseIdleConnections()
	}
}

// clients are the clients a delivery to t uses: its own Transport's, else
// the dispatcher's.
func (d *Dispatcher) clients(t *Target) (plain, traced *http.Client) {
	if t.Transport != nil {
		return t.Transport.client, t.Transport.traced
	}
	return d.client, d.traced
}
