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
// without reading logs. Each source's is a ring, so that noting one
// allocates nothing on the failing request's path.
var sigFailures = struct {
	sync.Mutex
	m map[string]*failureRing
}{m: map[string]*failureRing{}}

// failureRing holds a source's last failures: next is where the next one
// goes, n how many it holds.
type failureRing struct {
	list    [recentSignatureFailures]operator.SignatureFailure
	next, n int
}

// noteSignatureFailure keeps f as source's newest failed check.
func noteSignatureFailure(source string, f operator.SignatureFailure) {
	sigFailures.Lock()
	defer sigFailures.Unlock()
	r := sigFailures.m[source]
	if r == nil {
		r = new(failureRing)
		sigFailures.m[source] = r
	}
	r.list[r.next] = f
	r.next = (r.next + 1) % recentSignatureFailures
	r.n = min(r.n+1, recentSignatureFailures)
}

// recentSigFailures returns the kept failures of sources, newest first,
// the sources without one left out.
func recentSigFailures(sources []string) map[string][]operator.SignatureFailure {
	sigFailures.Lock()
	defer sigFailures.Unlock()
	out := map[string][]operator.SignatureFailure{}
	for _, src := range sources {
		r := sigFailures.m[src]
		if r == nil || r.n == 0 {
			continue
		}
		list := make([]operator.SignatureFailure, 0, r.n)
		for k := 1; k <= r.n; k++ {
			list = append(list, r.list[(r.next-k+recentSignatureFailures)%recentSignatureFailures])
		}
		out[src] = list
	}
	return out
}

// signatureFailures are the kept failures of the app's webhook sources.
func (a *App) signatureFailures() map[string][]operator.SignatureFailure {
	names := a.sourceNames()
	return recentSigFailures(slices.DeleteFunc(names, func(n string) bool { return n == alertSource }))
}
