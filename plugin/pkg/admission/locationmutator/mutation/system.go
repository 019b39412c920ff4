/*
Copyright The admitkit Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package mutation

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/admitkit/admitkit/plugin/internal/objectname"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/internal/btree"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
)

// ErrNotConverging is wrapped by the error of an object that still changed
// on the last pass allowed.
var ErrNotConverging = errors.New("mutation not converging")

// System runs a fixed set of mutators. It is immutable once built, so it is
// safe for concurrent use: the candidate lists it merges on first use
// (see candidates) are fixed by the trees it holds.
type System struct {
	// n is the number of mutators. The list of them is not kept: every
	// one is in anyKind or in a list of byKind, and a copy of it per
	// change would cost what the change does not.
	n int
	// byKind holds, for every binding some applyTo names, its candidates:
	// the mutators that bind to it merged with the kind-independent ones,
	// in run order. It is keyed by kind name alone, each holding the
	// group/versions of that name (nearly always one), so that a request
	// hashes one short string.
	byKind map[string][]kindLists
	// anyKind holds the mutators without applyTo (AssignMetadata), in run
	// order: the candidates of every other binding.
	anyKind *candidates
	// types holds, per slot key, the types the mutators imply there.
	types           btree.Tree[*keyTypes]
	needsNamespaces bool
	// unenforced says some mutator is in Warn or Audit mode.
	unenforced bool
}

// NewSystem orders the mutators (by kind, then name) and indexes them by
// binding. Duplicate mutators and schema conflicts are errors that name
// every mutator involved, each a *ConflictError; FindConflicts returns the
// same as values.
func NewSystem(ms []*Mutator) (*System, error) {
	if conflicts := FindConflicts(ms); len(conflicts) > 0 {
		errs := make([]error, len(conflicts))
		for i, c := range conflicts {
			errs[i] = &ConflictError{Conflict: c}
		}
		return nil, errors.Join(errs...)
	}
	b := NewBuilder()
	for _, m := range ms {
		b.Add(m)
	}
	return b.System(), nil
}

// ConflictError is one of NewSystem's errors: two mutators that cannot run
// together.
type ConflictError struct {
	Conflict
}

func (e *ConflictError) Error() string { return e.Reason }

// ConflictsWith returns the schema conflicts m would have with the
// mutators of s (one of m's kind and name aside, which m would replace),
// sorted by reason. When no mutator of s implies a type other than m's for
// a value m's location implies a type for, as for nearly every write, that
// is all it looks up (one lookup per value, whatever the number of
// mutators); otherwise it compares m with the mutators that share one of
// its bindings.
func (s *System) ConflictsWith(m *Mutator) []Conflict {
	if !s.mayConflict(m) {
		return nil
	}
	var (
		out  []Conflict
		seen = map[*Mutator]bool{}
	)
	for _, b := range m.bindings {
		list := s.list(b.GVK, b.Operation)
		if list == nil {
			continue
		}
		for o := range list.bound.All() {
			if o.id != m.id && !seen[o] {
				seen[o] = true
				if c, ok := conflictBetween(m, o); ok {
					out = append(out, c)
				}
			}
		}
	}
	sortConflicts(out)
	return out
}

// mayConflict reports whether some mutator of s implies a type other than
// m's for a value m's location implies a type for. Without one, m
// conflicts with none (see conflictBetween).
func (s *System) mayConflict(m *Mutator) bool {
	for _, slot := range m.slots {
		kt, ok := typesOf(s.types, slot.key)
		if ok && (len(kt.types) > 1 || kt.types[0] != slot.t) {
			return true
		}
	}
	return false
}

// runOrder is Gatekeeper's order: by kind, then by name (its IDs sort by
// group, kind, namespace and name, and all mutators share the group and
// have no namespace).
func runOrder(a, b *Mutator) int {
	if c := cmp.Compare(a.id.Kind, b.id.Kind); c != 0 {
		return c
	}
	return cmp.Compare(a.id.Name, b.id.Name)
}

// Len is the number of mutators.
func (s *System) Len() int { return s.n }

// Mutators returns the mutators in run order.
func (s *System) Mutators() []*Mutator {
	out := slices.AppendSeq(make([]*Mutator, 0, s.n), s.anyKind.anyKind.All())
	seen := make(map[*Mutator]bool, s.n)
	for _, kinds := range s.byKind {
		for _, k := range kinds {
			for _, list := range k.lists {
				if list == nil {
					continue
				}
				for m := range list.bound.All() {
					if !seen[m] {
						seen[m] = true
						out = append(out, m)
					}
				}
			}
		}
	}
	slices.SortFunc(out, runOrder)
	return out
}

// NeedsNamespaceLabels reports whether some mutator has a namespaceSelector.
func (s *System) NeedsNamespaceLabels() bool { return s.needsNamespaces }

// Candidates returns, in run order, the mutators that may apply to an
// object of this kind on this operation; their match still has to be
// tested. It is a map lookup and allocates nothing once the list has been
// merged (on the first call for it, see candidates), so a request for a
// kind no mutator names costs next to nothing however many mutators there
// are. The list is shared: callers must not change it.
func (s *System) Candidates(gvk schema.GroupVersionKind, operation string) []*Mutator {
	if s.n == 0 || operation != OperationCreate && operation != OperationUpdate {
		return nil
	}
	return s.candidates(gvk, operation)
}

// candidates is Candidates of a supported operation; apart, so that
// Candidates inlines, and a system without mutators costs a request no
// call.
func (s *System) candidates(gvk schema.GroupVersionKind, operation string) []*Mutator {
	if list := s.list(gvk, operation); list != nil {
		return list.get()
	}
	return s.anyKind.get()
}

// kindLists are the candidate lists of one group/version/kind, by
// operation (see operationIndex); nil where no mutator binds to it.
type kindLists struct {
	gvk   schema.GroupVersionKind
	lists [2]*candidates
}

// operationIndex is the index of a supported operation in
// kindLists.lists.
func operationIndex(operation string) int {
	if operation == OperationUpdate {
		return 1
	}
	return 0
}

// list returns the candidates of a binding, nil when no mutator binds to
// it.
func (s *System) list(gvk schema.GroupVersionKind, operation string) *candidates {
	for _, k := range s.byKind[gvk.Kind] {
		if k.gvk == gvk {
			return k.lists[operationIndex(operation)]
		}
	}
	return nil
}

// AnyMatches reports whether one of the candidates matches t.
func AnyMatches(candidates []*Mutator, t *match.Target) (bool, error) {
	for _, m := range candidates {
		ok, err := m.matcher.Matches(t)
		if err != nil {
			return false, fmt.Errorf("%s: %w", m.id, err)
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

// Result says what Mutate did.
type Result struct {
	// Applied lists, in run order, every mutator that changed the object in
	// some pass. The mutators themselves, not their IDs: a pointer is a
	// quarter of an ID's size, and a request allocates the list.
	Applied []*Mutator
	// Reached lists, in run order, every mutator that reached the end of
	// its location in a pass that changed the object, whether or not it
	// changed the value there: the mutators Gatekeeper's
	// gatekeeper.sh/mutations annotation names. It holds every one of
	// Applied, and is the same list when it holds no other: neither is to
	// be changed in place.
	Reached []*Mutator
	// Passes is the number of passes run. The last one changed nothing,
	// or changed the object in a way that proves the next one would
	// change nothing (see settles), which is then not run: a fresh
	// object most mutators write different fields of takes one pass.
	Passes int
	// ExternalValues are the values written from external data providers'
	// answers (or their failure policies), sorted, for the reports of
	// mutators in Warn and Audit mode. Mutate's caller fills it from
	// External.WrittenValues.
	ExternalValues []string
}

// Mutated reports whether the object changed.
func (r Result) Mutated() bool { return len(r.Applied) > 0 }

// Mutate runs the candidates over obj (in place) until a pass changes
// nothing, or one whose changes prove the next would change nothing (see
// settles). The matches are tested again on every pass against the
// object as it now is, since an AssignMetadata may have added a label a
// selector looks at. At most N+1 passes run, N being the number of
// mutators that matched; an object still changing after that is an error
// naming it and the mutators that changed it on the last pass.
//
// Mutators report real changes, so a pass that writes nothing proves
// convergence without a copy. Two mutators that write different values to
// the same place both report a change on every pass although the object
// ends each pass the same; from the third pass on (reached only when at
// least two mutators matched), a pass that writes is therefore compared
// with a snapshot taken before it. That costs a copy only for such objects
// and leaves them as Gatekeeper's deep comparison would, one pass later.
// t.Labels are obj's labels, as the plugin reads them from it; they are
// refreshed from obj on every pass after the first.
//
// obj is either an *unstructured.Unstructured, whose map is changed (custom
// resources, and any object a host holds in that form), or a pointer to a
// versioned API struct, changed in place by reflection (mutateTyped says
// how the two agree). It is the one entry point: every host and form goes
// through it, with what the request adds in opts.
func Mutate(candidates []*Mutator, obj runtime.Object, t *match.Target, opts Options) (Result, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok && u != nil {
		return mutateJSON(candidates, u.Object, t, opts.External)
	}
	return mutateTyped(candidates, obj, t, opts.External)
}

// Options are what a request brings to Mutate besides the object. The zero
// value runs the mutators without external data.
type Options struct {
	// External is the request's external data (NewExternal), kept across
	// its rounds of provider calls. When nil, a mutator that asks a
	// provider fails, and its failure policy decides.
	External *External
}

// mutateJSON is Mutate on an unstructured map.
func mutateJSON(candidates []*Mutator, obj map[string]any, t *match.Target, ext *External) (Result, error) {
	sc := jsonScratches.Get().(*jsonScratch)
	defer sc.release()
	sc.root.obj, sc.root.sc = obj, sc
	return run(candidates, &sc.root, t, ext, &sc.meta)
}

// mutable is an object the system mutates: an unstructured map, or a typed
// object (mutateTyped).
type mutable interface {
	// apply runs m once.
	apply(m *Mutator, md requestMeta) (effect, error)
	labels() labels.Labels
	snapshot() (any, error)
	// same compares the object with a snapshot, as JSON.
	same(snapshot any) (bool, error)
}

// unstructuredRoot is an object in its unstructured form, and the
// request's scratch, which every walk of the request reuses.
type unstructuredRoot struct {
	obj map[string]any
	sc  *jsonScratch
}

func (o *unstructuredRoot) apply(m *Mutator, md requestMeta) (effect, error) {
	if o.obj == nil {
		return effect{}, fmt.Errorf("%s: the object is null, there is nothing to mutate", m.id)
	}
	o.sc.reset()
	return m.run(o.sc.object(o.obj), md)
}
func (o *unstructuredRoot) labels() labels.Labels  { return labelsOf(o.obj) }
func (o *unstructuredRoot) snapshot() (any, error) { return deepCopyJSON(o.obj), nil }
func (o *unstructuredRoot) same(snapshot any) (bool, error) {
	return jsonEqual(snapshot, o.obj), nil
}

// run runs the candidates over obj; values is the request's, from its
// scratch.
func run(candidates []*Mutator, obj mutable, t *match.Target, ext *External, values *metaValues) (Result, error) {
	var (
		res Result
		// Indexes of the candidates: those that changed it, sorted (run
		// order); those that reached their location in a pass that
		// changed it; and, of the pass under way, those that changed it,
		// reached their location and matched. Each is a set of at most
		// len(candidates), so one array holds all five: on the stack,
		// for as many candidates as requests nearly always have.
		buf              [80]int
		idx              = buf[:]
		n                = len(candidates)
		applied, reached []int
		p                pass
		matched          int
		md               = requestMeta{Namespace: t.Namespace, Name: t.Name, values: values, external: ext}
	)
	if 5*n > len(buf) {
		idx = make([]int, 5*n)
	}
	applied, reached = idx[:0:n], idx[n:n:2*n]
	p.changed, p.reached, p.matched = idx[2*n:2*n:3*n], idx[3*n:3*n:4*n], idx[4*n:4*n:5*n]
	for pass := 1; ; pass++ {
		res.Passes = pass
		var snapshot any
		if pass >= 3 {
			var err error
			if snapshot, err = obj.snapshot(); err != nil {
				return res, fmt.Errorf("%s: %w", describe(t), err)
			}
		}
		if pass > 1 {
			t.Labels = obj.labels()
		}
		var err error
		if p, err = runPass(p.changed[:0], p.reached[:0], p.matched[:0], candidates, obj, t, md); err != nil {
			return res, err
		}
		matched = max(matched, len(p.matched))
		changed := len(p.changed) > 0
		if changed && snapshot != nil {
			same, err := obj.same(snapshot)
			if err != nil {
				return res, fmt.Errorf("%s: %w", describe(t), err)
			}
			changed = !same
		}
		settled := false
		if changed {
			applied = mergeIndexes(applied, p.changed)
			reached = mergeIndexes(reached, p.reached)
			if pass >= matched+1 {
				return res, notConverging(candidates, p.changed, t, pass)
			}
			settled = settles(candidates, &p)
		}
		if !changed || settled {
			res.Applied, res.Reached = mutatorsOf(candidates, applied, reached)
			if klog.V(5).Enabled() && res.Mutated() {
				klog.InfoS("LocationMutator converged", "object", describe(t), "passes", pass, "settledByProof", settled, "applied", IDs(res.Applied))
			}
			return res, nil
		}
	}
}

// pass is what one run over the candidates did.
type pass struct {
	matched []int // the candidates that matched, in run order
	changed []int // those that changed the object
	reached []int // those that reached their location (effect.reached)
	// unsure: a change the mutator's next run may not find as written
	// (effect.unsure).
	unsure bool
}

// runPass runs one pass, appending to changed, reached and matched, which
// have the room for every candidate.
func runPass(changed, reached, matched []int, candidates []*Mutator, obj mutable, t *match.Target, md requestMeta) (pass, error) {
	p := pass{changed: changed, reached: reached, matched: matched}
	for i, m := range candidates {
		ok, err := m.matcher.Matches(t)
		if err != nil {
			return p, fmt.Errorf("%s: %s: %w", describe(t), m.id, err)
		}
		if !ok {
			continue
		}
		p.matched = append(p.matched, i)
		e, err := obj.apply(m, md)
		if err != nil {
			return p, fmt.Errorf("%s: %w", describe(t), err)
		}
		if e.changed {
			p.changed = append(p.changed, i)
			p.unsure = p.unsure || e.unsure
		}
		if e.reached {
			p.reached = append(p.reached, i)
		}
	}
	return p, nil
}

// mutatorsOf returns the candidates at the indexes of applied and of
// reached, nil for none, in one allocation. Each list is capped at its
// length, so that appending to one never writes into the other. When the
// two hold the same indexes, as when every mutator that reached its
// location changed the object, they are the same list.
func mutatorsOf(candidates []*Mutator, applied, reached []int) (appliedMs, reachedMs []*Mutator) {
	if len(applied)+len(reached) == 0 {
		return nil, nil
	}
	n := len(applied)
	if slices.Equal(applied, reached) {
		out := make([]*Mutator, n)
		for i, c := range applied {
			out[i] = candidates[c]
		}
		return out, out
	}
	out := make([]*Mutator, n+len(reached))
	for i, c := range applied {
		out[i] = candidates[c]
	}
	for i, c := range reached {
		out[n+i] = candidates[c]
	}
	if n > 0 {
		appliedMs = out[:n:n]
	}
	if len(reached) > 0 {
		reachedMs = out[n:]
	}
	return appliedMs, reachedMs
}

// IDs returns the IDs of ms, for logs, errors and tests that name them;
// nil for none.
func IDs(ms []*Mutator) []ID {
	if len(ms) == 0 {
		return nil
	}
	ids := make([]ID, len(ms))
	for i, m := range ms {
		ids[i] = m.id
	}
	return ids
}

// mergeIndexes adds the sorted indexes add to the sorted set into.
func mergeIndexes(into, add []int) []int {
	if len(into) == 0 {
		// The first pass that changed the object, and most often the
		// only one.
		return append(into, add...)
	}
	for _, i := range add {
		if j, found := slices.BinarySearch(into, i); !found {
			into = slices.Insert(into, j, i)
		}
	}
	return into
}

func notConverging(candidates []*Mutator, changed []int, t *match.Target, passes int) error {
	names := make([]string, len(changed))
	for i, c := range changed {
		names[i] = candidates[c].id.String()
	}
	return fmt.Errorf("%w: %s still changed after %d passes, by %s", ErrNotConverging, describe(t), passes, strings.Join(names, ", "))
}

// describe names the object in errors, the way every plugin names it.
func describe(t *match.Target) string {
	return objectname.Of(t.GVK.GroupKind(), t.Namespace, t.Name, t.GenerateName)
}

// UnstructuredLabels presents metadata.labels of an unstructured object
// to selectors, as the passes after the first read them, without the copy
// unstructured.Unstructured's GetLabels makes on every call.
func UnstructuredLabels(obj map[string]any) labels.Labels { return labelsOf(obj) }

// labelsOf reads metadata.labels from an unstructured object without
// copying it.
func labelsOf(obj map[string]any) labelMap {
	md, _ := obj["metadata"].(map[string]any)
	l, _ := md["labels"].(map[string]any)
	return labelMap(l)
}

// labelMap presents the labels of an unstructured object to a selector.
// Values that are not strings read as missing.
type labelMap map[string]any

// Has reports whether the label is set to a string.
func (l labelMap) Has(key string) bool {
	_, ok := l[key].(string)
	return ok
}

// Get returns the label's value, or "".
func (l labelMap) Get(key string) string {
	s, _ := l[key].(string)
	return s
}

// Lookup returns the label's value and whether it is set.
func (l labelMap) Lookup(key string) (string, bool) {
	s, ok := l[key].(string)
	return s, ok
}
