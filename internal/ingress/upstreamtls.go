package ingress

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/hookline/hookline/internal/caddyfileopt"
)

// This file holds the TLS options of an https upstream (README.md,
// "Delivery": upstreams over TLS), named as reverse_proxy's http transport names them.

// UpstreamTLS configures the connections to an https upstream. A
// destination's field replaces the source's; the fields it leaves out are
// the source's.
type UpstreamTLS struct {
	// RootCAPEMFiles are PEM files of the certificate authorities the
	// upstream's certificate must chain to, instead of the system's
	// ({env.*} placeholders in the paths are resolved).
	RootCAPEMFiles []string `json:"root_ca_pem_files,omitempty"`
	// ClientCertificateFile is the PEM certificate presented to an upstream
	// that asks for one (mutual TLS), with ClientCertificateKeyFile.
	ClientCertificateFile string `json:"client_certificate_file,omitempty"`
	// ClientCertificateKeyFile is the PEM private key of
	// ClientCertificateFile.
	ClientCertificateKeyFile string `json:"client_certificate_key_file,omitempty"`
	// ServerName is the name sent in SNI and checked against the
	// upstream's certificate (default: the URL's host).
	ServerName string `json:"server_name,omitempty"`
	// InsecureSkipVerify accepts any certificate from the upstream: a
	// forged upstream then gets every event. For tests only; Provision
	// logs a warning.
	InsecureSkipVerify bool `json:"insecure_skip_verify,omitempty"`
}

// over is c with each field it does not set taken from base.
func (c *UpstreamTLS) over(base *UpstreamTLS) *UpstreamTLS {
	switch {
	case c == nil:
		return base
	case base == nil:
		return c
	}
	o := *c
	if len(o.RootCAPEMFiles) == 0 {
		o.RootCAPEMFiles = base.RootCAPEMFiles
	}
	if o.ClientCertificateFile == "" && o.ClientCertificateKeyFile == "" {
		o.ClientCertificateFile, o.ClientCertificateKeyFile = base.ClientCertificateFile, base.ClientCertificateKeyFile
	}
	if o.ServerName == "" {
		o.ServerName = base.ServerName
	}
	o.InsecureSkipVerify = o.InsecureSkipVerify || base.InsecureSkipVerify
	return &o
}

// insecure reports whether the upstream's certificate goes unchecked.
func (c *UpstreamTLS) insecure() bool { return c != nil && c.InsecureSkipVerify }

// check checks what needs no file read.
func (c *UpstreamTLS) check() error {
	if c == nil {
		return nil
	}
	if (c.ClientCertificateFile == "") != (c.ClientCertificateKeyFile == "") {
		return fmt.Errorf("tls_client_auth wants both a certificate file and a key file")
	}
	return nil
}

// config reads the files and makes the upstream's own TLS configuration
// (nil without TLS options). DeliveryOptions.compile calls it once check
// passed.
func (c *UpstreamTLS) config() (*tls.Config, error) {
	if c == nil {
		return nil, nil
	}
	repl := caddy.NewReplacer()
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName, InsecureSkipVerify: c.InsecureSkipVerify}
	if len(c.RootCAPEMFiles) > 0 {
		cfg.RootCAs = x509.NewCertPool()
		for _, f := range c.RootCAPEMFiles {
			f = repl.ReplaceKnown(f, "")
			pem, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("tls_trusted_ca_certs: %v", err)
			}
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("tls_trusted_ca_certs: no PEM certificate in %s", f)
			}
		}
	}
	if c.ClientCertificateFile != "" {
		cert, err := tls.LoadX509KeyPair(repl.ReplaceKnown(c.ClientCertificateFile, ""), repl.ReplaceKnown(c.ClientCertificateKeyFile, ""))
		if err != nil {
			return nil, fmt.Errorf("tls_client_auth: %v", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// tlsOption reports whether opt is one of the tls_* option names.
func tlsOption(opt string) bool {
	switch opt {
	case "tls_trusted_ca_certs", "tls_client_auth", "tls_server_name", "tls_insecure_skip_verify":
		return true
	}
	return false
}

// parseTLS reads one tls_* option line into o.TLS.
func (o *DeliveryOptions) parseTLS(d *caddyfile.Dispenser, opt string) error {
	if o.TLS == nil {
		o.TLS = new(UpstreamTLS)
	}
	switch opt {
	case "tls_trusted_ca_certs":
		files := d.RemainingArgs()
		if len(files) == 0 {
			return d.Err("tls_trusted_ca_certs wants one or more PEM files")
		}
		o.TLS.RootCAPEMFiles = append(o.TLS.RootCAPEMFiles, files...)
	case "tls_client_auth":
		args := d.RemainingArgs()
		if len(args) != 2 {
			return d.Err("tls_client_auth wants a certificate file and a key file")
		}
		o.TLS.ClientCertificateFile, o.TLS.ClientCertificateKeyFile = args[0], args[1]
	case "tls_server_name":
		name, err := caddyfileopt.OneArg(d)
		if err != nil {
			return err
		}
		o.TLS.ServerName = name
	case "tls_insecure_skip_verify":
		if d.NextArg() {
			return d.ArgErr()
		}
		o.TLS.InsecureSkipVerify = true
	}
	return nil
}
