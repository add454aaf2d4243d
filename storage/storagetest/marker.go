package storagetest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
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

// ReadFiles is the raw bytes of a store on disk: the file at path, or
// every file under the directory at path (the embedded store's logs,
// tables and manifest), each followed by a 0 byte, so that no marker is
// found across two files. A file removed while it is walked is passed
// over (the engine deletes obsolete ones in the background).
func ReadFiles(path string) ([]byte, error) {
	var out []byte
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		out = append(append(out, raw...), 0)
		return nil
	})
	return out, err
}
