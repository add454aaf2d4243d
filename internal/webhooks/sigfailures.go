package webhooks

import (
	"slices"
	"sync"

	"github.com/hookline/hookline/internal/operator"
)

// recentSignatureFailures is how many failed checks of each source the
// stats keep (the newest first).
const recentSignatureFailures = 10

// sigFailures are the last failed signature checks of each source on this
// node, kept across reloads (by source name, as the metrics are), for the
// stats and the dashboard: an operator sees why a provider's requests
// fail (a clock off by a steady skew, a secret rotated on one side only)
// without reading logs.
var sigFailures = struct {
	sync.Mutex
	m map[string][]operator.SignatureFailure
}{m: map[string][]operator.SignatureFailure{}}

// noteSignatureFailure keeps f as source's newest failed check.
func noteSignatureFailure(source string, f operator.SignatureFailure) {
	sigFailures.Lock()
	defer sigFailures.Unlock()
	list := sigFailures.m[source]
	if len(list) >= recentSignatureFailures {
		list = list[:recentSignatureFailures-1]
	}
	sigFailures.m[source] = append([]operator.SignatureFailure{f}, list...)
}

// recentSigFailures returns the kept failures of sources (a copy), the
// sources without one left out.
func recentSigFailures(sources []string) map[string][]operator.SignatureFailure {
	sigFailures.Lock()
	defer sigFailures.Unlock()
	out := map[string][]operator.SignatureFailure{}
	for _, src := range sources {
		if list := sigFailures.m[src]; len(list) > 0 {
			out[src] = slices.Clone(list)
		}
	}
	return out
}

// signatureFailures are the kept failures of the app's webhook sources.
func (a *App) signatureFailures() map[string][]operator.SignatureFailure {
	names := a.sourceNames()
	return recentSigFailures(slices.DeleteFunc(names, func(n string) bool { return n == alertSource }))
}
