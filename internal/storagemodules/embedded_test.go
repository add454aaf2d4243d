package storagemodules

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// TestEmbeddedStorageUnmarshalCaddyfile covers `storage embedded` on its own.
func TestEmbeddedStorageUnmarshalCaddyfile(t *testing.T) {
	tests := []struct {
		input, wantPath, wantErr string
		wantCache                int64
	}{
		{input: "embedded"},
		{input: "embedded /tmp/x.db", wantPath: "/tmp/x.db"},
		{input: "embedded {env.DB}", wantPath: "{env.DB}"},
		{input: "embedded a b", wantErr: "wrong argument count"},
		{input: "embedded {\n\tpath /x\n}", wantErr: `unrecognized storage embedded option "path"`},
		{input: "embedded /x {\n\tsync\n}", wantErr: `unrecognized storage embedded option "sync"`},
		{input: "embedded /x {\n\tcache_size 16MiB\n}", wantPath: "/x", wantCache: 16 << 20},
		{input: "embedded {\n\tcache_size 1GB\n}", wantCache: 1e9},
		{input: "embedded {\n\tcache_size\n}", wantErr: "wrong argument count"},
		{input: "embedded {\n\tcache_size 1MiB 2MiB\n}", wantErr: "wrong argument count"},
		{input: "embedded {\n\tcache_size lots\n}", wantErr: `cache_size: invalid size "lots" (want 1.0 MiB to 64 GiB)`},
		{input: "embedded {\n\tcache_size 512KiB\n}", wantErr: "cache_size: invalid size"},
		{input: "embedded {\n\tcache_size 65GiB\n}", wantErr: "cache_size: invalid size"},
	}
	for _, tt := range tests {
		t.Run(tt.input, func(t *testing.T) {
			s := new(EmbeddedStorage)
			err := s.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.input))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Path != tt.wantPath || s.CacheSize != tt.wantCache {
				t.Errorf("path, cache = %q, %d, want %q, %d", s.Path, s.CacheSize, tt.wantPath, tt.wantCache)
			}
			if err := s.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

// TestEmbeddedStorageValidate: a JSON config's cache_size is held to the
// Caddyfile's bounds.
func TestEmbeddedStorageValidate(t *testing.T) {
	for _, tt := range []struct {
		cache int64
		ok    bool
	}{{0, true}, {1 << 20, true}, {64 << 30, true}, {1<<20 - 1, false}, {-1, false}, {64<<30 + 1, false}} {
		err := (&EmbeddedStorage{CacheSize: tt.cache}).Validate()
		if (err == nil) != tt.ok {
			t.Errorf("cache_size %d: Validate = %v, want ok %v", tt.cache, err, tt.ok)
		}
	}
}
