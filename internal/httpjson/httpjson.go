// Package httpjson is hookline's one JSON writer: the ingress's
// acknowledgements and errors, the verifiers' handshakes, the admin API's
// answers (admin.api.webhooks) and the dashboard's. Bodies are
// encoding/json's (HTML characters escaped) with a trailing newline.
package httpjson

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Write writes v as a JSON body with status. The answer is never cached
// nor sniffed as another type.
func Write(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"internal error","code":"INTERNAL_ERROR"}`)
	}
	WriteBytes(w, status, append(b, '\n'))
}

// WriteBytes writes b, a JSON body already encoded (with its trailing
// newline), with status and the headers Write sets. The ingress's hot
// path builds its fixed answers with AppendString into a Buffer and
// writes them with it.
func WriteBytes(w http.ResponseWriter, status int, b []byte) {
	// the four header values share one array: one allocation, not four;
	// each slice is capped at its length, so an Add to one of them copies
	vals := new([4]string)
	vals[0], vals[1], vals[2], vals[3] = "application/json", contentLength(len(b)), "nosniff", "no-store"
	h := w.Header()
	h["Content-Type"] = vals[0:1:1]
	h["Content-Length"] = vals[1:2:2]
	h["X-Content-Type-Options"] = vals[2:3:3]
	h["Cache-Control"] = vals[3:4:4]
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// smallLengths are the Content-Length values of the short answers,
// formatted once.
var smallLengths = func() (l [512]string) {
	for i := range l {
		l[i] = strconv.Itoa(i)
	}
	return l
}()

func contentLength(n int) string {
	if n < len(smallLengths) {
		return smallLengths[n]
	}
	return strconv.Itoa(n)
}

// Buffer is a reusable byte slice for building an answer; get one with
// GetBuffer and give it back with PutBuffer once written.
type Buffer struct{ B []byte }

var buffers = sync.Pool{New: func() any { return &Buffer{B: make([]byte, 0, 512)} }}

// GetBuffer returns an empty Buffer from a pool.
func GetBuffer() *Buffer {
	b := buffers.Get().(*Buffer)
	b.B = b.B[:0]
	return b
}

// PutBuffer gives b back to the pool (not when it grew large: a rare big
// answer must not stay pinned).
func PutBuffer(b *Buffer) {
	if cap(b.B) <= 4<<10 {
		buffers.Put(b)
	}
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string exactly as encoding/json
// encodes it (HTML characters, U+2028 and U+2029 escaped, invalid UTF-8
// replaced by U+FFFD), without allocating.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				// control characters and <, >, & as \u00XX
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
