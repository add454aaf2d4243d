package ingress

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// TestReadBodyAllocatesWhatArrives: a request announcing a Content-Length
// of max_body but sending a few bytes must not make the server allocate
// max_body before they arrive.
func TestReadBodyAllocatesWhatArrives(t *testing.T) {
	const max = 64 << 20 // 64 MiB announced
	read := func() error {
		r := httptest.NewRequest(http.MethodPost, "/hooks", io.NopCloser(strings.NewReader("only a few bytes")))
		r.ContentLength = max
		_, err := readBody(httptest.NewRecorder(), r, max)
		return err
	}
	if err := read(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("short body: err %v, want io.ErrUnexpectedEOF", err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const runs = 4
	for range runs {
		_ = read()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 2*initialBodyBuffer {
		t.Fatalf("%d bytes allocated per short request announcing %d; want at most %d", per, max, 2*initialBodyBuffer)
	}
}

// TestReadBody: bodies of every size relative to the initial buffer are
// read exactly; too long and too short ones fail.
func TestReadBody(t *testing.T) {
	for _, n := range []int{1, 100, initialBodyBuffer - 1, initialBodyBuffer, initialBodyBuffer + 1, 3*initialBodyBuffer + 7, 1 << 20} {
		body := bytes.Repeat([]byte("abcdefg"), n/7+1)[:n]
		for _, known := range []bool{true, false} {
			r := httptest.NewRequest(http.MethodPost, "/hooks", io.NopCloser(iotestHalfReader{bytes.NewReader(body)}))
			r.ContentLength = -1
			if known {
				r.ContentLength = int64(n)
			}
			got, err := readBody(httptest.NewRecorder(), r, 1<<20)
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("n=%d known=%v: err %v, %d bytes equal=%v", n, known, err, len(got), bytes.Equal(got, body))
			}
			if known && cap(got) > 2*n && cap(got) > initialBodyBuffer {
				t.Errorf("n=%d: buffer capacity %d", n, cap(got))
			}
		}
	}
	// over max_body while streaming
	r := httptest.NewRequest(http.MethodPost, "/hooks", io.NopCloser(strings.NewReader(strings.Repeat("x", 200))))
	r.ContentLength = -1
	var mbe *http.MaxBytesError
	if _, err := readBody(httptest.NewRecorder(), r, 100); !errors.As(err, &mbe) {
		t.Fatalf("streamed over max: %v", err)
	}
	// longer than its Content-Length
	r = httptest.NewRequest(http.MethodPost, "/hooks", io.NopCloser(strings.NewReader("0123456789")))
	r.ContentLength = 5
	if _, err := readBody(httptest.NewRecorder(), r, 100); err == nil {
		t.Fatal("body longer than Content-Length accepted")
	}
}

// iotestHalfReader returns at most half of what is asked (at least one
// byte), like a network connection delivering a body in pieces.
type iotestHalfReader struct{ r io.Reader }

func (h iotestHalfReader) Read(p []byte) (int, error) {
	return h.r.Read(p[:(len(p)+1)/2])
}
