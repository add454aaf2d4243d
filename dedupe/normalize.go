package dedupe

import (
	"crypto/sha256"
	"encoding/hex"
)

// MaxIDLen is the longest event id kept as it is, in bytes.
const MaxIDLen = 256

// Normalize returns an event id that can travel in an HTTP header (the
// Webhook-Id sent upstream) and in a URL path segment once escaped.
//
// An id is kept as it is when it is at most MaxIDLen bytes of printable
// text: every byte a visible ASCII character (0x21-0x7E) or a space, with
// no space at either end. Any other non-empty id (longer, or holding a
// control character such as NUL, TAB, CR, LF or DEL, or a byte outside
// ASCII, UTF-8 text included, or a leading or trailing space, which HTTP
// would strip) is replaced by the lowercase hex SHA-256 of its bytes (64
// bytes of printable text), as docs/reference.md says. "" stays "" (no id).
//
// Two ids stay distinct after Normalize unless SHA-256 collides, the same
// id always gives the same result, and Normalize(Normalize(id)) ==
// Normalize(id). An id is normalized once, where it is found (the id_from
// rules); the stores keep it and the workers send it as it is.
func Normalize(id string) string {
	if id == "" || Printable(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// Printable reports whether id is kept as it is by Normalize: 1 to MaxIDLen
// bytes, each 0x20-0x7E, not starting or ending with a space.
func Printable(id string) bool {
	if id == "" || len(id) > MaxIDLen || id[0] == ' ' || id[len(id)-1] == ' ' {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}
