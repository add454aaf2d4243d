package webhooks_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestPrometheusRules runs promtool on contrib/prometheus: the alerting
// rules are valid (check rules) and fire as their unit tests say (test
// rules: among others, that the store-wide gauges are aggregated with
// max, not sum). Without promtool it skips, except under CI=true, where
// scripts/test installs it (Debian's prometheus package).
func TestPrometheusRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not found (scripts/test installs it with the Debian package prometheus)")
		}
		t.Skip("promtool not found: install the Debian package prometheus (scripts/test does)")
	}
	dir := filepath.Join("..", "..", "contrib", "prometheus")
	rules, err := filepath.Glob(filepath.Join(dir, "*-alerts.yml"))
	if err != nil || len(rules) == 0 {
		t.Fatalf("no rule files in %s: %v", dir, err)
	}
	tests, _ := filepath.Glob(filepath.Join(dir, "*.test.yml"))
	if len(tests) == 0 {
		t.Fatalf("no rule unit tests in %s", dir)
	}
	for _, args := range [][]string{append([]string{"check", "rules"}, rules...), append([]string{"test", "rules"}, tests...)} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}
