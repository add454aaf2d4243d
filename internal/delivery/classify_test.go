package delivery

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"syscall"
	"testing"
	"time"
)

func TestClassifyStatus(t *testing.T) {
	for i, tc := range []struct {
		status int
		expect Class
	}{
		{status: http.StatusOK, expect: Success},
		{status: http.StatusCreated, expect: Success},
		{status: http.StatusAccepted, expect: Success},
		{status: http.StatusNoContent, expect: Success},
		{status: 299, expect: Success},

		{status: http.StatusRequestTimeout, expect: Transient},
		{status: http.StatusTooEarly, expect: Transient},
		{status: http.StatusTooManyRequests, expect: Transient},
		{status: http.StatusInternalServerError, expect: Transient},
		{status: http.StatusNotImplemented, expect: Transient},
		{status: http.StatusBadGateway, expect: Transient},
		{status: http.StatusServiceUnavailable, expect: Transient},
		{status: http.StatusGatewayTimeout, expect: Transient},

		{status: http.StatusBadRequest, expect: Permanent},
		{status: http.StatusUnauthorized, expect: Permanent},
		{status: http.StatusForbidden, expect: Permanent},
		{status: http.StatusNotFound, expect: Permanent},
		{status: http.StatusMethodNotAllowed, expect: Permanent},
		{status: http.StatusConflict, expect: Permanent},
		{status: http.StatusGone, expect: Permanent},
		{status: http.StatusRequestEntityTooLarge, expect: Permanent},
		{status: http.StatusUnprocessableEntity, expect: Permanent},
		{status: http.StatusMovedPermanently, expect: Permanent},
		{status: http.StatusFound, expect: Permanent},
		{status: http.StatusTemporaryRedirect, expect: Permanent},
		{status: http.StatusNotModified, expect: Permanent},
		{status: http.StatusContinue, expect: Permanent},
	} {
		if actual := Classify(tc.status, nil); actual != tc.expect {
			t.Errorf("Test %d: Classify(%d, nil) = %v, expected %v", i, tc.status, actual, tc.expect)
		}
	}
}

func TestClassifyError(t *testing.T) {
	certErr := &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}
	for i, tc := range []struct {
		name   string
		status int
		err    error
		expect Class
	}{
		{name: "dial refused", err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, expect: Transient},
		{name: "read reset", err: &url.Error{Op: "Post", URL: "http://upstream", Err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}}, expect: Transient},
		{name: "deadline", err: context.DeadlineExceeded, expect: Transient},
		{name: "wrapped deadline", err: &url.Error{Op: "Post", URL: "http://upstream", Err: context.DeadlineExceeded}, expect: Transient},
		{name: "canceled", err: context.Canceled, expect: Transient},
		{name: "EOF", err: io.EOF, expect: Transient},
		{name: "unexpected EOF", err: &url.Error{Op: "Post", URL: "http://upstream", Err: io.ErrUnexpectedEOF}, expect: Transient},
		{name: "DNS", err: &net.DNSError{Err: "no such host", Name: "upstream.invalid", IsNotFound: true}, expect: Transient},
		{name: "TLS handshake timeout", err: errors.New("net/http: TLS handshake timeout"), expect: Transient},
		// a status that came with an error does not count
		{name: "error with status 200", status: http.StatusOK, err: io.EOF, expect: Transient},

		{name: "verification", err: &url.Error{Op: "Post", URL: "https://upstream", Err: certErr}, expect: Permanent},
		{name: "unknown authority", err: fmt.Errorf("post: %w", x509.UnknownAuthorityError{}), expect: Permanent},
		{name: "hostname", err: fmt.Errorf("post: %w", x509.HostnameError{Host: "upstream"}), expect: Permanent},
		{name: "expired", err: &url.Error{Op: "Post", URL: "https://upstream", Err: x509.CertificateInvalidError{Reason: x509.Expired}}, expect: Permanent},
		// a timeout is never the certificate's fault, whatever else is in the chain
		{name: "cert error and deadline", err: errors.Join(certErr, context.DeadlineExceeded), expect: Transient},
	} {
		if actual := Classify(tc.status, tc.err); actual != tc.expect {
			t.Errorf("Test %d (%s): Classify(%d, %v) = %v, expected %v", i, tc.name, tc.status, tc.err, actual, tc.expect)
		}
	}
}

// Errors as a real http.Client returns them.
func TestClassifyRealErrors(t *testing.T) {
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the rejected handshakes
	tlsSrv.StartTLS()
	defer tlsSrv.Close()

	// connection refused: a port nobody listens on any more
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + ln.Addr().String()
	ln.Close()

	// a server that accepts and hangs up without answering
	hangup, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hangup.Close()
	go func() {
		for {
			c, err := hangup.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 1024)
			_, _ = c.Read(buf)
			c.Close()
		}
	}()

	// a server slower than the client's timeout
	slowDone := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-slowDone:
		}
	}))
	defer slow.Close()
	defer close(slowDone)

	// trusts the test server's certificate, but asks for another name
	mismatch := tlsSrv.Client()
	tr := mismatch.Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.ServerName = "upstream.invalid"
	mismatch = &http.Client{Transport: tr}

	for i, tc := range []struct {
		name   string
		client *http.Client
		url    string
		expect Class
		check  func(error) bool
	}{
		{
			name:   "unknown authority",
			client: &http.Client{},
			url:    tlsSrv.URL,
			expect: Permanent,
			check: func(err error) bool {
				var e x509.UnknownAuthorityError
				return errors.As(err, &e)
			},
		},
		{
			name:   "hostname mismatch",
			client: mismatch,
			url:    tlsSrv.URL,
			expect: Permanent,
			check: func(err error) bool {
				var e x509.HostnameError
				return errors.As(err, &e)
			},
		},
		{
			name:   "trusted",
			client: tlsSrv.Client(),
			url:    tlsSrv.URL,
			expect: Success,
		},
		{
			name:   "connection refused",
			client: &http.Client{},
			url:    closedURL,
			expect: Transient,
			check: func(err error) bool {
				var e *net.OpError
				return errors.As(err, &e)
			},
		},
		{
			name:   "hang-up",
			client: &http.Client{},
			url:    "http://" + hangup.Addr().String(),
			expect: Transient,
			check:  func(err error) bool { return errors.Is(err, io.EOF) },
		},
		{
			name:   "timeout",
			client: &http.Client{Timeout: 50 * time.Millisecond},
			url:    slow.URL,
			expect: Transient,
			check: func(err error) bool {
				var e net.Error
				return errors.As(err, &e) && e.Timeout()
			},
		},
	} {
		resp, err := tc.client.Post(tc.url, "application/json", nil)
		status := 0
		if resp != nil {
			status = resp.StatusCode
			resp.Body.Close()
		}
		if tc.check != nil && (err == nil || !tc.check(err)) {
			t.Errorf("Test %d (%s): the request did not fail as the test intends: %v", i, tc.name, err)
			continue
		}
		if actual := Classify(status, err); actual != tc.expect {
			t.Errorf("Test %d (%s): Classify(%d, %v) = %v, expected %v", i, tc.name, status, err, actual, tc.expect)
		}
	}
}

func TestClassString(t *testing.T) {
	for c, expect := range map[Class]string{Success: "delivered", Transient: "transient", Permanent: "permanent"} {
		if actual := c.String(); actual != expect {
			t.Errorf("Class(%d).String() = %q, expected %q", int(c), actual, expect)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for i, tc := range []struct {
		value    string // "" means no header
		expect   time.Duration
		expectOK bool
	}{
		{value: "", expect: 0, expectOK: false},
		{value: "0", expect: 0, expectOK: true},
		{value: "1", expect: time.Second, expectOK: true},
		{value: "120", expect: 2 * time.Minute, expectOK: true},
		{value: "3600", expect: time.Hour, expectOK: true},
		// capped at MaxRetryAfter
		{value: "3601", expect: MaxRetryAfter, expectOK: true},
		{value: "86400", expect: MaxRetryAfter, expectOK: true},
		{value: "9223372036854775807", expect: MaxRetryAfter, expectOK: true},
		// HTTP-date
		{value: now.Add(90 * time.Second).Format(http.TimeFormat), expect: 90 * time.Second, expectOK: true},
		{value: now.Add(30 * time.Minute).Format(time.RFC850), expect: 30 * time.Minute, expectOK: true},
		{value: now.Add(45 * time.Second).Format(time.ANSIC), expect: 45 * time.Second, expectOK: true},
		{value: now.Format(http.TimeFormat), expect: 0, expectOK: true},
		{value: now.Add(-time.Hour).Format(http.TimeFormat), expect: 0, expectOK: true},
		{value: "Wed, 21 Oct 2015 07:28:00 GMT", expect: 0, expectOK: true},
		{value: now.Add(48 * time.Hour).Format(http.TimeFormat), expect: MaxRetryAfter, expectOK: true},
		{value: "Fri, 31 Dec 2100 23:59:59 GMT", expect: MaxRetryAfter, expectOK: true},
		// invalid
		{value: "-1", expect: 0, expectOK: false},
		{value: "-3600", expect: 0, expectOK: false},
		{value: "soon", expect: 0, expectOK: false},
		{value: "1.5", expect: 0, expectOK: false},
		{value: "10s", expect: 0, expectOK: false},
		{value: "2025-06-01T12:01:00Z", expect: 0, expectOK: false},
	} {
		h := http.Header{}
		if tc.value != "" {
			h.Set("Retry-After", tc.value)
		}
		actual, ok := RetryAfter(h, now)
		if actual != tc.expect || ok != tc.expectOK {
			t.Errorf("Test %d: RetryAfter(%q) = (%v, %v), expected (%v, %v)", i, tc.value, actual, ok, tc.expect, tc.expectOK)
		}
	}
}
