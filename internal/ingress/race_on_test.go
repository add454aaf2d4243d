//go:build race

package ingress

// raceEnabled: the race detector instruments this build, which adds
// allocations of its own (allocation guards are run without it).
const raceEnabled = true
