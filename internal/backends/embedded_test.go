package backends

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// TestEmbeddedStorageUnmarshalCaddyfile covers `storage embedded` on its own.
func TestEmbeddedStorageUnmarshalCaddyfile(t *testing.T) {
	tests := []struct {
		input, wantPath, wantErr string
	}{
		{input: "embedded"},
		{input: "embedded /tmp/x.db", wantPath: "/tmp/x.db"},
		{input: "embedded {env.DB}", wantPath: "{env.DB}"},
		{input: "embedded a b", wantErr: "wrong argument count"},
		{input: "embedded {\n\tpath /x\n}", wantErr: "takes no block"},
		{input: "embedded /x {\n\tsync\n}", wantErr: "takes no block"},
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
			if s.Path != tt.wantPath {
				t.Errorf("path = %q, want %q", s.Path, tt.wantPath)
			}
		})
	}
}
