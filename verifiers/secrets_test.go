package verifiers

import (
	"os"
	"path/filepath"
	"testing"
)

func TestResolveSecrets(t *testing.T) {
	t.Setenv("HOOKLINE_TEST_SECRET", "from-env")
	t.Setenv("HOOKLINE_TEST_EMPTY", "")
	dir := t.TempDir()
	file := filepath.Join(dir, "secret")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name    string
		in      []string
		want    []string
		wantErr bool
	}{
		{name: "literal", in: []string{"plain"}, want: []string{"plain"}},
		{name: "env", in: []string{"{env.HOOKLINE_TEST_SECRET}"}, want: []string{"from-env"}},
		{name: "file, trailing newline dropped", in: []string{"{file." + file + "}"}, want: []string{"from-file"}},
		{name: "mixed text and placeholder", in: []string{"whsec_{env.HOOKLINE_TEST_SECRET}"}, want: []string{"whsec_from-env"}},
		{name: "empty ones are dropped", in: []string{"{env.HOOKLINE_TEST_EMPTY}", "{env.HOOKLINE_TEST_SECRET}", ""}, want: []string{"from-env"}},
		{name: "order kept", in: []string{"b", "a"}, want: []string{"b", "a"}},
		{name: "escaped braces are literal", in: []string{`x\{y\}`}, want: []string{"x{y}"}},
		{name: "none configured", in: nil, wantErr: true},
		{name: "all empty", in: []string{"{env.HOOKLINE_TEST_EMPTY}", "{env.HOOKLINE_TEST_UNSET_XYZ}"}, wantErr: true},
		{name: "missing file", in: []string{"{file." + filepath.Join(dir, "nope") + "}"}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveSecrets(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %q, want error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d keys, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if string(got[i]) != tc.want[i] {
					t.Errorf("key %d = %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}
