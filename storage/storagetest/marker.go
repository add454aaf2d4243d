package storagetest

import (
	"bytes"
	"encoding/base64"
)

// MarkerForms are the forms in which a marker string put in an event's
// body or headers can be stored by a backend: as is (headers, a raw
// payload) and base64-encoded (a body in a JSON record), at each of the
// three alignments a base64 encoding can start it at (only the groups of
// the encoding that hold marker bytes alone are kept), for the erasure
// tests that look for it in a backend's raw bytes.
func MarkerForms(marker string) [][]byte {
	forms := [][]byte{[]byte(marker)}
	for k := range 3 {
		pad := bytes.Repeat([]byte{0}, k)
		enc := base64.StdEncoding.EncodeToString(append(pad, marker...))
		from, to := 4*((k+2)/3), 4*((k+len(marker))/3)
		if to-from >= 8 {
			forms = append(forms, []byte(enc[from:to]))
		}
	}
	return forms
}

// HasMarker reports whether raw holds marker in any of its forms
// (MarkerForms).
func HasMarker(raw []byte, marker string) bool {
	for _, f := range MarkerForms(marker) {
		if bytes.Contains(raw, f) {
			return true
		}
	}
	return false
}
