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
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// maxNameLength is the longest mutator name Gatekeeper accepts.
const maxNameLength = 63

// Operations a mutator can be bound to. The apiserver spells them the same
// way (admission.Create, admission.Update).
const (
	OperationCreate = "CREATE"
	OperationUpdate = "UPDATE"
	operationAll    = "*"
)

// supportedOperations are the only ones mutation runs on.
var supportedOperations = []string{OperationCreate, OperationUpdate}

// ID names a mutator: its kind and its name.
type ID struct {
	Kind string
	Name string
}

// String is "<Kind>/<name>", the form the audit annotation uses.
func (id ID) String() string { return id.Kind + "/" + id.Name }

func (id ID) less(o ID) bool {
	if id.Kind != o.Kind {
		return id.Kind < o.Kind
	}
	return id.Name < o.Name
}

// binding is one (group/version/kind, operation) a mutator applies to.
type binding struct {
	GVK       schema.GroupVersionKind
	Operation string
}

// Mutator is a validated, ready-to-run mutator: what every kind has (a
// name, a location, pathTests, a match and the kinds it applies to) and
// its kind's operation.
type Mutator struct {
	id ID
	// generation is the manifest's metadata.generation, which Gatekeeper's
	// mutation annotations name.
	generation int64
	location   path.Path
	nodes      []path.Node
	// conds[i] is the pathTest condition at depth i ("" for none); nil when
	// there are no tests.
	conds    []mutationsv1.Condition
	matcher  *match.Matcher
	bindings []binding // nil for AssignMetadata, which applies to every kind
	// slots are the types the location implies, for the conflict check.
	slots []schemaSlot
	op    operation
	// hints are the walker's, one per node.
	hints []fieldHint
	// places are the nodes as settles compares them; readPlaces those of
	// them whose contents the mutator reads (readPlacesOf).
	places, readPlaces []place

	// mode is ModeAnnotation's value; only enforced mutators change
	// objects, the others are tried on a copy and reported.
	mode Mode
}

// operation is the part of a mutator its kind decides: what it writes at
// the end of the location, and what type it implies there. Each kind has
// its own type (assignOp, assignMetadataOp, modifySetOp and assignImageOp,
// each in a file of its own).
type operation interface {
	// write changes the value at s, the end of the location; exists says
	// whether s holds one.
	write(m *Mutator, s slot, exists bool, md requestMeta) (effect, error)
	// endType is the type the kind implies for the value it writes.
	endType() impliedType
	// summary says in a few words, bounded in length, what it does at
	// where: `set <where> to "Always"` (Effect).
	summary(where string) string
}

// elementWriter is an operation that may replace a whole list element: a
// location ending in a keyed selector.
type elementWriter interface {
	// writeElement writes element j of l, or appends it when j is -1.
	writeElement(m *Mutator, l list, j int) (effect, error)
}

// labelAdder is an operation that may add a label to the object, and so
// make it match mutators it did not match before.
type labelAdder interface {
	addsLabel(m *Mutator) bool
}

// AddsLabel reports whether the mutator may add a label to the objects it
// changes (an AssignMetadata of a label): what other mutators select may
// then change after it ran.
func (m *Mutator) AddsLabel() bool {
	l, ok := m.op.(labelAdder)
	return ok && l.addsLabel(m)
}

// ID returns the mutator's kind and name.
func (m *Mutator) ID() ID { return m.id }

// Generation returns the metadata.generation of the manifest or object the
// mutator was decoded from.
func (m *Mutator) Generation() int64 { return m.generation }

// Mode returns the mutator's mode, ModeEnforce when the annotation is
// absent.
func (m *Mutator) Mode() Mode {
	if m.mode == "" {
		return ModeEnforce
	}
	return m.mode
}

// Location returns the parsed spec.location.
func (m *Mutator) Location() path.Path { return m.location }

// Matcher returns the compiled spec.match.
func (m *Mutator) Matcher() *match.Matcher { return m.matcher }

func validateName(name string, errs field.ErrorList) field.ErrorList {
	p := field.NewPath("metadata", "name")
	switch {
	case name == "":
		errs = append(errs, field.Required(p, ""))
	case len(name) > maxNameLength:
		errs = append(errs, field.TooLong(p, name, maxNameLength))
	}
	return errs
}

func parseLocation(loc string, errs field.ErrorList) (path.Path, field.ErrorList) {
	p := field.NewPath("spec", "location")
	parsed, err := path.Parse(loc)
	switch {
	case err != nil:
		return parsed, append(errs, field.Invalid(p, loc, err.Error()))
	case len(parsed.Nodes) == 0:
		return parsed, append(errs, field.Required(p, "an empty location changes nothing"))
	}
	return parsed, errs
}

func rootedAtMetadata(p path.Path) bool {
	if len(p.Nodes) == 0 {
		return false
	}
	o, ok := p.Nodes[0].(path.Object)
	return ok && o.Reference == "metadata"
}

func lastNode(p path.Path) path.Node { return p.Nodes[len(p.Nodes)-1] }

// changesListKey reports a location ending in `[k: v].k`: writing there
// would change the key that selected the element, so the next pass would
// select (and create) a different one.
func changesListKey(p path.Path) bool {
	n := len(p.Nodes)
	if n < 2 {
		return false
	}
	o, ok := p.Nodes[n-1].(path.Object)
	if !ok {
		return false
	}
	l, ok := p.Nodes[n-2].(path.List)
	return ok && l.KeyField == o.Reference
}

func compileApplyTo(applyTo []mutationsv1.ApplyTo, errs field.ErrorList) ([]binding, field.ErrorList) {
	p := field.NewPath("spec", "applyTo")
	if len(applyTo) == 0 {
		return nil, append(errs, field.Required(p, "list the groups, versions and kinds the mutator changes"))
	}
	var out []binding
	for i, a := range applyTo {
		ip := p.Index(i)
		if len(a.Groups) == 0 {
			errs = append(errs, field.Required(ip.Child("groups"), `use [""] for the core group`))
		}
		if len(a.Versions) == 0 {
			errs = append(errs, field.Required(ip.Child("versions"), ""))
		}
		if len(a.Kinds) == 0 {
			errs = append(errs, field.Required(ip.Child("kinds"), ""))
		}
		ops, opErrs := effectiveOperations(a.Operations, ip.Child("operations"))
		errs = append(errs, opErrs...)
		for _, g := range a.Groups {
			for _, v := range a.Versions {
				for _, k := range a.Kinds {
					for _, op := range ops {
						b := binding{GVK: schema.GroupVersionKind{Group: g, Version: v, Kind: k}, Operation: op}
						if !slices.Contains(out, b) {
							out = append(out, b)
						}
					}
				}
			}
		}
	}
	return out, errs
}

func effectiveOperations(ops []string, p *field.Path) ([]string, field.ErrorList) {
	var errs field.ErrorList
	if len(ops) == 0 {
		return supportedOperations, nil
	}
	seen := map[string]bool{}
	for i, op := range ops {
		switch {
		case seen[op]:
			errs = append(errs, field.Duplicate(p.Index(i), op))
		case op != OperationCreate && op != OperationUpdate && op != operationAll:
			errs = append(errs, field.NotSupported(p.Index(i), op, []string{OperationCreate, OperationUpdate, operationAll}))
		}
		seen[op] = true
	}
	if seen[operationAll] && len(ops) > 1 {
		errs = append(errs, field.Invalid(p, ops, `"*" cannot be combined with other operations`))
	}
	if seen[operationAll] {
		return supportedOperations, errs
	}
	var out []string
	for _, op := range supportedOperations {
		if seen[op] {
			out = append(out, op)
		}
	}
	return out, errs
}

// compilePathTests checks the tests against the location and lays them out
// by depth (the index of a subPath's last node). Conflicts are judged by
// depth, not by their order in the list as Gatekeeper does: a MustExist
// deeper than a MustNotExist can never be satisfied, whichever is listed
// first.
func compilePathTests(tests []mutationsv1.PathTest, loc path.Path, errs field.ErrorList) ([]mutationsv1.Condition, field.ErrorList) {
	if len(tests) == 0 {
		return nil, errs
	}
	p := field.NewPath("spec", "parameters", "pathTests")
	conds := make([]mutationsv1.Condition, len(loc.Nodes))
	before := len(errs)
	for i, t := range tests {
		errs = addPathTest(conds, t, loc, p.Index(i), errs)
	}
	if len(errs) > before {
		return nil, errs
	}
	return conds, checkPathTestDepths(conds, loc, p, errs)
}

// addPathTest records t at its depth in conds.
func addPathTest(conds []mutationsv1.Condition, t mutationsv1.PathTest, loc path.Path, p *field.Path, errs field.ErrorList) field.ErrorList {
	if t.Condition != mutationsv1.MustExist && t.Condition != mutationsv1.MustNotExist {
		return append(errs, field.NotSupported(p.Child("condition"), t.Condition, []mutationsv1.Condition{mutationsv1.MustExist, mutationsv1.MustNotExist}))
	}
	sub, err := path.Parse(t.SubPath)
	switch {
	case err != nil:
		return append(errs, field.Invalid(p.Child("subPath"), t.SubPath, err.Error()))
	case len(sub.Nodes) == 0:
		return append(errs, field.Required(p.Child("subPath"), ""))
	case !path.HasPrefix(loc, sub):
		return append(errs, field.Invalid(p.Child("subPath"), t.SubPath, fmt.Sprintf("must be a prefix of the location %q", loc.String())))
	}
	d := len(sub.Nodes) - 1
	if conds[d] != "" && conds[d] != t.Condition {
		return append(errs, field.Invalid(p, t.SubPath, fmt.Sprintf("%q is required to exist and not to exist", sub.String())))
	}
	conds[d] = t.Condition
	return errs
}

// checkPathTestDepths refuses a MustExist below a MustNotExist.
func checkPathTestDepths(conds []mutationsv1.Condition, loc path.Path, p *field.Path, errs field.ErrorList) field.ErrorList {
	forbidden := slices.Index(conds, mutationsv1.MustNotExist)
	if forbidden < 0 {
		return errs
	}
	for d := forbidden + 1; d < len(conds); d++ {
		if conds[d] == mutationsv1.MustExist {
			errs = append(errs, field.Invalid(p, prefixString(loc, d), fmt.Sprintf("requires %q to exist below %q, which must not exist", prefixString(loc, d), prefixString(loc, forbidden))))
		}
	}
	return errs
}

// prefixString prints the first depth+1 nodes of p, for messages.
func prefixString(p path.Path, depth int) string {
	return path.Path{Nodes: p.Nodes[:depth+1]}.String()
}

// endRule says what a kind of mutator may find at the end of its location.
type endRule struct {
	// listEnd refuses a location ending in a list selector, with this
	// reason; "" lets a keyed selector end it (Assign replaces whole
	// elements) but never a glob.
	listEnd string
	// keepKey refuses `[k: v].k`.
	keepKey bool
}

// newMutator starts a mutator with a schema: its name and location are
// checked, and the location may not be rooted at metadata (quoted or not)
// nor end where rule forbids.
func newMutator(kind, name, location string, rule endRule) (*Mutator, field.ErrorList) {
	m := &Mutator{id: ID{Kind: kind, Name: name}}
	errs := validateName(name, nil)
	m.location, errs = parseLocation(location, errs)
	m.nodes = m.location.Nodes
	if len(m.nodes) == 0 {
		return m, errs
	}
	lp := field.NewPath("spec", "location")
	if rootedAtMetadata(m.location) {
		errs = append(errs, field.Invalid(lp, location, kind+" cannot change metadata; use AssignMetadata"))
	}
	if l, ok := lastNode(m.location).(path.List); ok {
		switch {
		case rule.listEnd != "":
			errs = append(errs, field.Invalid(lp, location, rule.listEnd))
		case l.Glob:
			errs = append(errs, field.Invalid(lp, location, "a location cannot end in a glob: there is no element to append"))
		}
	}
	if rule.keepKey && changesListKey(m.location) {
		errs = append(errs, field.Invalid(lp, location, "cannot change the key field of a list element"))
	}
	return m, errs
}

// endsInList reports whether the location selects list elements.
func (m *Mutator) endsInList() bool {
	if len(m.nodes) == 0 {
		return false
	}
	_, ok := lastNode(m.location).(path.List)
	return ok
}

// finish compiles what every mutator with a schema has (applyTo, pathTests
// and match) and returns m, or nil with every problem found.
func (m *Mutator) finish(applyTo []mutationsv1.ApplyTo, tests []mutationsv1.PathTest, mt match.Match, errs field.ErrorList) (*Mutator, field.ErrorList) {
	m.bindings, errs = compileApplyTo(applyTo, errs)
	m.conds, errs = compilePathTests(tests, m.location, errs)
	return m.finishMatch(mt, errs)
}

func (m *Mutator) finishMatch(mt match.Match, errs field.ErrorList) (*Mutator, field.ErrorList) {
	matcher, mErrs := match.Compile(mt, field.NewPath("spec", "match"))
	m.matcher = matcher
	if errs = append(errs, mErrs...); len(errs) > 0 {
		return nil, errs
	}
	m.hints = make([]fieldHint, len(m.nodes))
	m.places = placesOf(m.nodes)
	m.readPlaces = readPlacesOf(m.places, m.conds)
	m.slots = m.schemaSlots()
	return m, nil
}
