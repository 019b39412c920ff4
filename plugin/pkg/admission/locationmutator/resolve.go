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

package locationmutator

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// The types of the errors in a mutator's status entry.
const (
	errorTypeInvalid    = "Invalid"
	errorTypeConflict   = "Conflict"
	errorTypeOverridden = "OverriddenByConfiguration"
	// errorTypeMode is not an error: the mutator is in Warn or Audit mode,
	// which Gatekeeper's status has no field for.
	errorTypeMode = "Mode"
)

// outcome is what one server decided about one generation of a mutator
// object: enforced, or not and why.
type outcome struct {
	uid        types.UID
	generation int64
	enforced   bool
	errorType  string
	message    string
	// mode is the mode of an enforced mutator: the resolver lets it run,
	// and it changes objects only in ModeEnforce.
	mode mutation.Mode
}

// state is the outcome as the metrics count it.
func (o outcome) state() string {
	switch {
	case o.enforced:
		return stateEnforced
	case o.errorType == errorTypeInvalid:
		return stateError
	}
	return stateConflict
}

// liveMutator is one generation of a mutator object, decoded.
type liveMutator struct {
	uid        types.UID
	generation int64
	created    time.Time
	id         mutation.ID
	mutator    *mutation.Mutator // nil when the object is invalid
	invalid    string
	took       time.Duration // to decode and validate
	// mode is the object's mode annotation as written, hasMode whether it
	// has one: a change of it alone does not bump the generation.
	mode    string
	hasMode bool

	// Where it came from, for its status and events: the object is the
	// informer's latest copy.
	kind   *kindWatch
	name   string
	object *unstructured.Unstructured

	// What the resolver found: the conflicts with configured mutators and
	// with the other live ones it is compared with, and its outcome.
	staticConflicts []mutation.Conflict
	neighbours      map[*liveMutator]mutation.Conflict
	outcome         outcome
	decided         bool
}

// settled reports whether the resolver has decided about lm.
func (lm *liveMutator) settled() bool { return lm.decided }

// before is the precedence of live mutators: the older object first, ties
// broken by kind and name, so that of two conflicting mutators the one
// created later is the one left out.
func (lm *liveMutator) before(o *liveMutator) bool {
	if c := lm.created.Compare(o.created); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(lm.id.Kind, o.id.Kind); c != 0 {
		return c < 0
	}
	return lm.id.Name < o.id.Name
}

// resolver is the policy that decides which live mutators run: the
// configured mutators always do; a live mutator does unless it is invalid,
// has the kind and name of a configured one, conflicts with a configured
// one, or conflicts with an enforced live one that comes before it. It
// keeps the conflict graph, so that a change costs the changed mutator and
// those it conflicts with, directly or through others after it.
type resolver struct {
	static  map[mutation.ID]bool
	schema  *mutation.SchemaIndex // the configured and the comparable live mutators
	system  *mutation.Builder     // what requests run
	byUID   map[types.UID]*liveMutator
	byID    map[mutation.ID]*liveMutator // the live ones in schema
	states  map[string]int               // outcomes by metric state
	pending map[*liveMutator]bool        // to decide again
}

func newResolver(static *mutation.System) *resolver {
	r := &resolver{
		static:  map[mutation.ID]bool{},
		schema:  mutation.NewSchemaIndex(),
		system:  mutation.NewBuilder(),
		byUID:   map[types.UID]*liveMutator{},
		byID:    map[mutation.ID]*liveMutator{},
		states:  map[string]int{stateEnforced: 0, stateError: 0, stateConflict: 0},
		pending: map[*liveMutator]bool{},
	}
	for _, m := range static.Mutators() {
		r.static[m.ID()] = true
		r.schema.Add(m)
		r.system.Add(m)
	}
	return r
}

// remove forgets an object; the mutators it conflicted with are decided
// again by the next settle.
func (r *resolver) remove(uid types.UID) {
	lm, ok := r.byUID[uid]
	if !ok {
		return
	}
	delete(r.byUID, uid)
	delete(r.pending, lm)
	if lm.settled() {
		r.states[lm.outcome.state()]--
	}
	if r.byID[lm.id] == lm {
		delete(r.byID, lm.id)
		r.schema.Remove(lm.mutator)
	}
	if lm.outcome.enforced {
		r.system.Remove(lm.id)
	}
	for n := range lm.neighbours {
		delete(n.neighbours, lm)
		r.pending[n] = true
	}
}

// put adds a decoded object, replacing its earlier generation.
func (r *resolver) put(lm *liveMutator) {
	r.remove(lm.uid)
	r.byUID[lm.uid] = lm
	lm.outcome, lm.decided = outcome{}, false
	r.pending[lm] = true
	if lm.mutator == nil || r.static[lm.id] {
		return
	}
	if _, taken := r.byID[lm.id]; taken {
		return // the object before it under that name stays; see decide
	}
	for _, c := range r.schema.Conflicts(lm.mutator) {
		other := c.Other(lm.id)
		if r.static[other] {
			lm.staticConflicts = append(lm.staticConflicts, c)
			continue
		}
		if n := r.byID[other]; n != nil {
			link(lm, n, c)
			link(n, lm, c)
		}
	}
	r.byID[lm.id] = lm
	r.schema.Add(lm.mutator)
}

// link records that a conflicts with b; most mutators conflict with none,
// so the map is made on the first.
func link(a, b *liveMutator, c mutation.Conflict) {
	if a.neighbours == nil {
		a.neighbours = map[*liveMutator]mutation.Conflict{}
	}
	a.neighbours[b] = c
}

// settle decides again every live mutator a put or remove may have
// changed, in precedence order, and returns those whose outcome changed.
// A mutator's outcome depends only on those before it, so the ones to
// decide are the changed ones and every one after them in the conflict
// graph.
func (r *resolver) settle() []*liveMutator {
	var todo []*liveMutator
	for lm := range r.pending {
		todo = append(todo, lm)
	}
	clear(r.pending)
	seen := map[*liveMutator]bool{}
	for _, lm := range todo {
		seen[lm] = true
	}
	for i := 0; i < len(todo); i++ {
		for n := range todo[i].neighbours {
			if !seen[n] && todo[i].before(n) {
				seen[n] = true
				todo = append(todo, n)
			}
		}
	}
	slices.SortFunc(todo, func(a, b *liveMutator) int {
		switch {
		case a.before(b):
			return -1
		case b.before(a):
			return 1
		}
		return 0
	})
	var changed []*liveMutator
	for _, lm := range todo {
		o := r.decide(lm)
		if lm.decided && o == lm.outcome {
			continue
		}
		if lm.settled() {
			r.states[lm.outcome.state()]--
		}
		r.states[o.state()]++
		switch {
		case o.enforced && !lm.outcome.enforced:
			r.system.Add(lm.mutator)
		case !o.enforced && lm.outcome.enforced:
			r.system.Remove(lm.id)
		}
		lm.outcome, lm.decided = o, true
		changed = append(changed, lm)
	}
	return changed
}

// decide is lm's outcome given the mutators before it.
func (r *resolver) decide(lm *liveMutator) outcome {
	o := outcome{uid: lm.uid, generation: lm.generation}
	switch {
	case lm.mutator == nil:
		o.errorType, o.message = errorTypeInvalid, lm.invalid
	case r.static[lm.id]:
		o.errorType, o.message = errorTypeOverridden, fmt.Sprintf("the %s admission configuration has a %s named %q, which takes precedence", PluginName, lm.id.Kind, lm.id.Name)
	case r.byID[lm.id] != lm:
		o.errorType, o.message = errorTypeConflict, fmt.Sprintf("%s %q: metadata.name: Duplicate value: %q", lm.id.Kind, lm.id.Name, lm.id.Name)
	case len(lm.staticConflicts) > 0:
		c := lm.staticConflicts[0]
		o.errorType, o.message = errorTypeConflict, notEnforcedMessage(c.Other(lm.id), c)
	default:
		var first *liveMutator
		for n := range lm.neighbours {
			if n.outcome.enforced && n.before(lm) && (first == nil || n.before(first)) {
				first = n
			}
		}
		if first == nil {
			o.enforced, o.mode = true, lm.mutator.Mode()
			return o
		}
		o.errorType, o.message = errorTypeConflict, notEnforcedMessage(first.id, lm.neighbours[first])
	}
	return o
}

func notEnforcedMessage(keep mutation.ID, c mutation.Conflict) string {
	return fmt.Sprintf("not enforced: it cannot run with %s, which came first: %v", keep, c)
}
