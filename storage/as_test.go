package storage_test

import (
	"testing"

	"github.com/hookline/hookline/storage"
)

// wrapper is a store wrapping another (as encryption at rest does).
type wrapper struct {
	storage.Store
	inner storage.Store
}

func (w wrapper) Unwrap() storage.Store { return w.inner }

// marked is a store of its own type, found through the wrappers.
type marked struct{ storage.Store }

func (marked) Mark() {}

func TestAs(t *testing.T) {
	type marker interface{ Mark() }
	m := marked{}
	tests := []struct {
		name string
		s    any
		want bool
	}{
		{"the store itself", m, true},
		{"under one wrapper", wrapper{inner: m}, true},
		{"under two wrappers", wrapper{inner: wrapper{inner: m}}, true},
		{"not in the chain", wrapper{inner: wrapper{}}, false},
		{"a store that wraps nothing", marked{}.Store, false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := storage.As[marker](tt.s)
			if ok != tt.want {
				t.Fatalf("As: ok %v, want %v", ok, tt.want)
			}
			if ok != (got != nil) {
				t.Errorf("As: ok %v with %v", ok, got)
			}
		})
	}
}
