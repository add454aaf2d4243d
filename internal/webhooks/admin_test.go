package webhooks

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/hookline/hookline/internal/operator"
)

// TestAdminRoutes: the admin module mounts the operator API at each of
// its patterns, and its handler writes every answer itself: it never
// returns an error, which Caddy's admin would write as a second body.
// No config is loaded here: no webhooks app runs.
func TestAdminRoutes(t *testing.T) {
	routes := AdminAPI{}.Routes()
	var patterns []string
	for _, rt := range routes {
		patterns = append(patterns, rt.Pattern)
	}
	if want := operatorAPI.Patterns(); !slices.Equal(patterns, want) {
		t.Fatalf("patterns %q, want %q", patterns, want)
	}
	for _, rt := range routes {
		w := httptest.NewRecorder()
		if err := rt.Handler.ServeHTTP(w, httptest.NewRequest("GET", "/webhooks/stats", nil)); err != nil {
			t.Fatalf("%s: returned %v", rt.Pattern, err)
		}
		var e operator.ErrorAnswer
		if w.Code != 404 || json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Error != operator.ErrNotRunning.Error() {
			t.Fatalf("%s: %d %s", rt.Pattern, w.Code, w.Body)
		}
	}
}
