//go:build !race

package ingress

// raceEnabled: see race_on_test.go.
const raceEnabled = false
