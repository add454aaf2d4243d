package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testPKI is a throwaway certificate authority and what it signed: a
// server certificate for 127.0.0.1 and upstream.test, and a client
// certificate, each also as PEM files.
type testPKI struct {
	pool                *x509.CertPool
	server, client      tls.Certificate
	caFile              string
	clientFile, keyFile string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hookline test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	// no file named *.key: caddytest rewrites such paths in configs
	p := &testPKI{pool: x509.NewCertPool(), caFile: filepath.Join(dir, "ca.pem"),
		clientFile: filepath.Join(dir, "client.pem"), keyFile: filepath.Join(dir, "client-key.pem")}
	p.pool.AddCert(ca)
	writePEM(t, p.caFile, "CERTIFICATE", caDER)
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, ips []net.IP, names []string) (tls.Certificate, []byte, []byte) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: ips, DNSNames: names,
		}, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, _ := x509.MarshalECPrivateKey(key)
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, der, keyDER
	}
	p.server, _, _ = leaf(2, "upstream", x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")}, []string{"upstream.test"})
	var certDER, keyDER []byte
	p.client, certDER, keyDER = leaf(3, "hookline-client", x509.ExtKeyUsageClientAuth, nil, nil)
	writePEM(t, p.clientFile, "CERTIFICATE", certDER)
	writePEM(t, p.keyFile, "EC PRIVATE KEY", keyDER)
	return p
}

func writePEM(t *testing.T, file, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// newTLSUpstream is an upstream over https with the PKI's server
// certificate; with clientAuth it demands a client certificate the PKI
// signed.
func newTLSUpstream(t *testing.T, p *testPKI, clientAuth bool) *upstream {
	u := &upstream{arrived: make(chan recorded, 1000)}
	u.Server = httptest.NewUnstartedServer(u.handler())
	u.TLS = &tls.Config{Certificates: []tls.Certificate{p.server}}
	if clientAuth {
		u.TLS.ClientAuth, u.TLS.ClientCAs = tls.RequireAndVerifyClientCert, p.pool
	}
	u.Server.Config.ErrorLog = nil
	u.StartTLS()
	t.Cleanup(u.Close)
	return u
}

// TestUpstreamTLS: the TLS options of the upstream, per destination. A
// destination trusting the test CA gets its deliveries; one without it
// (the system's roots) dead-letters at the first attempt, the certificate
// error named; tls_server_name is sent as SNI and checked against the
// certificate; tls_client_auth presents the client certificate to an
// upstream that demands one, and a destination without it never gets
// through.
func TestUpstreamTLS(t *testing.T) {
	p := newTestPKI(t)
	plain := newUpstream(t)
	open, mutual := newTLSUpstream(t, p, false), newTLSUpstream(t, p, true)
	startCaddy(t, plain, "", fmt.Sprintf(`
	webhook_ingress /hooks/tls tlsrc {
		verify none
		id_from header Idempotency-Key
		forward_to %[1]s/in/default
		retry {
			max_attempts 2
			backoff 100ms 100ms jitter 0
		}
		destination trusted %[1]s/in/trusted {
			tls_trusted_ca_certs %[3]s
		}
		destination named %[1]s/in/named {
			tls_trusted_ca_certs %[3]s
			tls_server_name upstream.test
		}
		destination wrongname %[1]s/in/wrongname {
			tls_trusted_ca_certs %[3]s
			tls_server_name other.test
		}
		destination mtls %[2]s/in/mtls {
			tls_trusted_ca_certs %[3]s
			tls_client_auth %[4]s %[5]s
		}
		destination nocert %[2]s/in/nocert {
			tls_trusted_ca_certs %[3]s
		}
	}`, open.URL, mutual.URL, p.caFile, p.clientFile, p.keyFile))

	body := []byte(`{"type":"tls.test"}`)
	if resp, m := post(t, "/hooks/tls", body, map[string]string{"Content-Type": "application/json", "Idempotency-Key": "tls-1"}); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("post: %d %v", resp.StatusCode, m)
	}
	got := map[string]recorded{}
	for range 2 {
		r := open.next(t, 5*time.Second)
		got[r.Header.Get("X-Webhook-Destination")] = r
	}
	if r := mutual.next(t, 5*time.Second); r.Header.Get("X-Webhook-Destination") != "mtls" {
		t.Errorf("the mutual TLS upstream got %q", r.Header.Get("X-Webhook-Destination"))
	} else if certs := r.TLS.PeerCertificates; len(certs) != 1 || certs[0].Subject.CommonName != "hookline-client" {
		t.Errorf("mtls: client certificates %v", certs)
	}
	if _, ok := got["trusted"]; !ok {
		t.Errorf("trusted got nothing: %v", got)
	}
	if r, ok := got["named"]; !ok || r.TLS.ServerName != "upstream.test" {
		t.Errorf("named: %v, SNI %q", ok, r.TLS.ServerName)
	}
	open.none(t, 300*time.Millisecond)
	mutual.none(t, 50*time.Millisecond)

	var ev map[string]any
	waitFor(t, func() bool {
		_, ev = admin(t, "GET", "/webhooks/events/tlsrc/tls-1", "")
		return fmt.Sprint(deliveryStates(ev)) == "map[default:dead mtls:delivered named:delivered nocert:dead trusted:delivered wrongname:dead]"
	})
	_, page := admin(t, "GET", "/webhooks/dlq?source=tlsrc", "")
	errs := map[string]string{}
	for _, e := range page["entries"].([]any) {
		e := e.(map[string]any)
		errs[destinationName(e)] = fmt.Sprint(e["error"])
	}
	for dest, want := range map[string]string{"default": "certificate signed by unknown authority", "wrongname": "other.test"} {
		if !strings.Contains(errs[dest], want) {
			t.Errorf("%s's DLQ error %q, want it to name %q", dest, errs[dest], want)
		}
	}
	for _, d := range ev["deliveries"].([]any) {
		d := d.(map[string]any)
		// a certificate error is permanent; a refused handshake is retried
		want := map[string]int{"default": 1, "wrongname": 1, "nocert": 2}[destinationName(d)]
		if n := len(d["attempts"].([]any)); want != 0 && n != want {
			t.Errorf("delivery %s: %d attempts, want %d", destinationName(d), n, want)
		}
	}
	if strings.Contains(fmt.Sprint(page), "PRIVATE") || strings.Contains(fmt.Sprint(page), p.keyFile) {
		t.Errorf("the DLQ shows key material: %v", page)
	}
}
