package dashboard

import "testing"

// TestAPIRoutePath: an API path is served only when none of its segments
// is empty, "." or ".." (escaped or not); an escaped "/" inside a segment,
// doubled or trailing, is part of an id.
func TestAPIRoutePath(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
		ok        bool
	}{
		{"/webhooks/events/wa/a%2Fb", "/webhooks/events/wa/a/b", true},
		{"/webhooks/events/wa/a%2F%2Fb", "/webhooks/events/wa/a//b", true},
		{"/webhooks/events/wa/ab%2F", "/webhooks/events/wa/ab/", true},
		{"/webhooks/events/wa/%2E%2E%2Fx", "/webhooks/events/wa/../x", true}, // one segment: an id, not a step up
		{"/webhooks/stats", "/webhooks/stats", true},
		{"/webhooks/events/wa/..", "", false},
		{"/webhooks/events/wa/%2E%2E", "", false},
		{"/webhooks/events/wa/%2e", "", false},
		{"/webhooks/events//x", "", false},
		{"/webhooks/stats/", "", false},
		{"/webhooks/events/wa/%zz", "", false},
	} {
		got, ok := apiRoutePath(tc.raw)
		if ok != tc.ok || got != tc.want {
			t.Errorf("apiRoutePath(%q) = %q, %v; want %q, %v", tc.raw, got, ok, tc.want, tc.ok)
		}
	}
}
