package mutation

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/path"
)

// MaxNameLength is the longest mutator name Gatekeeper accepts.
const MaxNameLength = 63

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

// Binding is one (group/version/kind, operation) a mutator applies to.
type Binding struct {
	GVK       schema.GroupVersionKind
	Operation string
}

// Mutator is a validated, ready-to-run mutator of any kind.
type Mutator struct {
	id       ID
	location path.Path
	nodes    []path.Node
	// conds[i] is the pathTest condition at depth i ("" for none); nil when
	// there are no tests.
	conds    []Condition
	matcher  *match.Matcher
	bindings []Binding // nil for AssignMetadata, which applies to every kind

	// Assign and AssignMetadata
	value        any
	fromMetadata string

	// ModifySet
	prune  bool
	values []any

	// AssignImage
	domain, imgPath, tag string
}

// ID returns the mutator's kind and name.
func (m *Mutator) ID() ID { return m.id }

// Location returns the parsed spec.location.
func (m *Mutator) Location() path.Path { return m.location }

// Bindings returns what the mutator's applyTo expands to; nil means every
// kind (AssignMetadata).
func (m *Mutator) Bindings() []Binding { return m.bindings }

// Matcher returns the compiled spec.match.
func (m *Mutator) Matcher() *match.Matcher { return m.matcher }

func validateName(name string, errs field.ErrorList) field.ErrorList {
	p := field.NewPath("metadata", "name")
	switch {
	case name == "":
		errs = append(errs, field.Required(p, ""))
	case len(name) > MaxNameLength:
		errs = append(errs, field.TooLong(p, name, MaxNameLength))
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

func compileApplyTo(applyTo []ApplyTo, errs field.ErrorList) ([]Binding, field.ErrorList) {
	p := field.NewPath("spec", "applyTo")
	if len(applyTo) == 0 {
		return nil, append(errs, field.Required(p, "list the groups, versions and kinds the mutator changes"))
	}
	var out []Binding
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
						b := Binding{GVK: schema.GroupVersionKind{Group: g, Version: v, Kind: k}, Operation: op}
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
// by depth. Conflicts are judged by depth, not by their order in the list:
// a MustExist deeper than a MustNotExist can never be satisfied.
func compilePathTests(tests []PathTest, loc path.Path, errs field.ErrorList) ([]Condition, field.ErrorList) {
	if len(tests) == 0 {
		return nil, errs
	}
	p := field.NewPath("spec", "parameters", "pathTests")
	conds := make([]Condition, len(loc.Nodes))
	before := len(errs)
	for i, t := range tests {
		ip := p.Index(i)
		if t.Condition != MustExist && t.Condition != MustNotExist {
			errs = append(errs, field.NotSupported(ip.Child("condition"), t.Condition, []Condition{MustExist, MustNotExist}))
			continue
		}
		sub, err := path.Parse(t.SubPath)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(ip.Child("subPath"), t.SubPath, err.Error()))
			continue
		case len(sub.Nodes) == 0:
			errs = append(errs, field.Required(ip.Child("subPath"), ""))
			continue
		case !path.HasPrefix(loc, sub):
			errs = append(errs, field.Invalid(ip.Child("subPath"), t.SubPath, fmt.Sprintf("must be a prefix of the location %q", loc.String())))
			continue
		}
		d := len(sub.Nodes) - 1
		if conds[d] != "" && conds[d] != t.Condition {
			errs = append(errs, field.Invalid(ip, t.SubPath, fmt.Sprintf("%q is required to exist and not to exist", sub.String())))
			continue
		}
		conds[d] = t.Condition
	}
	if len(errs) > before {
		return nil, errs
	}
	firstForbidden := -1
	for d, c := range conds {
		if c == MustNotExist && firstForbidden < 0 {
			firstForbidden = d
		}
		if c == MustExist && firstForbidden >= 0 && d > firstForbidden {
			errs = append(errs, field.Invalid(p, prefixString(loc, d), fmt.Sprintf("requires %q to exist below %q, which must not exist", prefixString(loc, d), prefixString(loc, firstForbidden))))
		}
	}
	return conds, errs
}

// prefixString prints the first depth+1 nodes of p, for messages.
func prefixString(p path.Path, depth int) string {
	return path.Path{Nodes: p.Nodes[:depth+1]}.String()
}

func compileMatch(m match.Match, errs field.ErrorList) (*match.Matcher, field.ErrorList) {
	matcher, mErrs := match.Compile(m, field.NewPath("spec", "match"))
	return matcher, append(errs, mErrs...)
}

// compileAssignField validates parameters.assign. listElement says the
// location ends in a list selector, where only a literal value can go.
func compileAssignField(f AssignField, p *field.Path, listElement bool, errs field.ErrorList) (value any, fromMetadata string, _ field.ErrorList) {
	set := 0
	if f.Value != nil {
		set++
	}
	if f.FromMetadata != nil {
		set++
	}
	if f.ExternalData != nil {
		set++
	}
	if set != 1 {
		return nil, "", append(errs, field.Invalid(p, "", "exactly one of value, fromMetadata or externalData must be set"))
	}
	switch {
	case f.ExternalData != nil:
		errs = append(errs, field.Forbidden(p.Child("externalData"), "external data providers cannot be called from inside kube-apiserver; use value or fromMetadata"))
	case f.FromMetadata != nil:
		if f.FromMetadata.Field != "namespace" && f.FromMetadata.Field != "name" {
			errs = append(errs, field.NotSupported(p.Child("fromMetadata", "field"), f.FromMetadata.Field, []string{"namespace", "name"}))
		}
		if listElement {
			errs = append(errs, field.Invalid(p.Child("fromMetadata"), f.FromMetadata.Field, "cannot assign a string to a list element"))
		}
		fromMetadata = f.FromMetadata.Field
	default:
		value = f.Value.Value
	}
	return value, fromMetadata, errs
}

// NewAssign validates an Assign and returns its mutator.
func NewAssign(a *Assign) (*Mutator, field.ErrorList) {
	m := &Mutator{id: ID{Kind: KindAssign, Name: a.Name}}
	errs := validateName(a.Name, nil)
	loc, errs := parseLocation(a.Spec.Location, errs)
	lp := field.NewPath("spec", "location")
	m.location, m.nodes = loc, loc.Nodes
	listElement := false
	if len(loc.Nodes) > 0 {
		if rootedAtMetadata(loc) {
			errs = append(errs, field.Invalid(lp, a.Spec.Location, "Assign cannot change metadata; use AssignMetadata"))
		}
		if l, ok := lastNode(loc).(path.List); ok {
			listElement = true
			if l.Glob {
				errs = append(errs, field.Invalid(lp, a.Spec.Location, "a location cannot end in a glob: there is no element to append"))
			}
		}
		if changesListKey(loc) {
			errs = append(errs, field.Invalid(lp, a.Spec.Location, "cannot change the key field of a list element"))
		}
	}
	vp := field.NewPath("spec", "parameters", "assign")
	m.value, m.fromMetadata, errs = compileAssignField(a.Spec.Parameters.Assign, vp, listElement, errs)
	if listElement && a.Spec.Parameters.Assign.Value != nil {
		if l := lastNode(loc).(path.List); !l.Glob {
			obj, ok := m.value.(map[string]any)
			switch {
			case !ok:
				errs = append(errs, field.Invalid(vp.Child("value"), m.value, "a list element must be assigned an object"))
			case !jsonEqual(obj[l.KeyField], l.KeyValue):
				errs = append(errs, field.Invalid(vp.Child("value"), m.value, fmt.Sprintf("the element must carry %s: %v, as the location selects", path.Quote(l.KeyField), l.KeyValue)))
			}
		}
	}
	m.bindings, errs = compileApplyTo(a.Spec.ApplyTo, errs)
	m.conds, errs = compilePathTests(a.Spec.Parameters.PathTests, loc, errs)
	m.matcher, errs = compileMatch(a.Spec.Match, errs)
	if len(errs) > 0 {
		return nil, errs
	}
	return m, nil
}

// NewAssignMetadata validates an AssignMetadata and returns its mutator.
func NewAssignMetadata(a *AssignMetadata) (*Mutator, field.ErrorList) {
	m := &Mutator{id: ID{Kind: KindAssignMetadata, Name: a.Name}}
	errs := validateName(a.Name, nil)
	loc, errs := parseLocation(a.Spec.Location, errs)
	m.location, m.nodes = loc, loc.Nodes
	if len(loc.Nodes) > 0 && !isMetadataKey(loc) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "location"), a.Spec.Location, "must be metadata.labels.<key> or metadata.annotations.<key>"))
	}
	vp := field.NewPath("spec", "parameters", "assign")
	m.value, m.fromMetadata, errs = compileAssignField(a.Spec.Parameters.Assign, vp, false, errs)
	if a.Spec.Parameters.Assign.Value != nil {
		if _, ok := m.value.(string); !ok {
			errs = append(errs, field.Invalid(vp.Child("value"), m.value, "labels and annotations are strings"))
		}
	}
	// Add-only: an existing label or annotation is never replaced, which is
	// also what makes metadata mutators converge.
	m.conds = []Condition{"", "", MustNotExist}
	m.matcher, errs = compileMatch(a.Spec.Match, errs)
	if len(errs) > 0 {
		return nil, errs
	}
	return m, nil
}

func isMetadataKey(p path.Path) bool {
	if len(p.Nodes) != 3 {
		return false
	}
	for i, n := range p.Nodes {
		o, ok := n.(path.Object)
		if !ok {
			return false
		}
		switch i {
		case 0:
			if o.Reference != "metadata" {
				return false
			}
		case 1:
			if o.Reference != "labels" && o.Reference != "annotations" {
				return false
			}
		}
	}
	return true
}

// NewModifySet validates a ModifySet and returns its mutator.
func NewModifySet(s *ModifySet) (*Mutator, field.ErrorList) {
	m := &Mutator{id: ID{Kind: KindModifySet, Name: s.Name}}
	errs := validateName(s.Name, nil)
	loc, errs := parseLocation(s.Spec.Location, errs)
	lp := field.NewPath("spec", "location")
	m.location, m.nodes = loc, loc.Nodes
	if len(loc.Nodes) > 0 {
		if rootedAtMetadata(loc) {
			errs = append(errs, field.Invalid(lp, s.Spec.Location, "ModifySet cannot change metadata"))
		}
		if _, ok := lastNode(loc).(path.List); ok {
			errs = append(errs, field.Invalid(lp, s.Spec.Location, "must end in a field holding the list, not in a list selector"))
		}
	}
	switch s.Spec.Parameters.Operation {
	case "", OperationMerge:
	case OperationPrune:
		m.prune = true
	default:
		errs = append(errs, field.NotSupported(field.NewPath("spec", "parameters", "operation"), s.Spec.Parameters.Operation, []string{OperationMerge, OperationPrune}))
	}
	for _, v := range s.Spec.Parameters.Values.FromList {
		m.values = append(m.values, v.Value)
	}
	m.bindings, errs = compileApplyTo(s.Spec.ApplyTo, errs)
	m.conds, errs = compilePathTests(s.Spec.Parameters.PathTests, loc, errs)
	m.matcher, errs = compileMatch(s.Spec.Match, errs)
	if len(errs) > 0 {
		return nil, errs
	}
	return m, nil
}

// NewAssignImage validates an AssignImage and returns its mutator.
func NewAssignImage(a *AssignImage) (*Mutator, field.ErrorList) {
	m := &Mutator{id: ID{Kind: KindAssignImage, Name: a.Name}}
	errs := validateName(a.Name, nil)
	loc, errs := parseLocation(a.Spec.Location, errs)
	lp := field.NewPath("spec", "location")
	m.location, m.nodes = loc, loc.Nodes
	if len(loc.Nodes) > 0 {
		if rootedAtMetadata(loc) {
			errs = append(errs, field.Invalid(lp, a.Spec.Location, "AssignImage cannot change metadata"))
		}
		if _, ok := lastNode(loc).(path.List); ok {
			errs = append(errs, field.Invalid(lp, a.Spec.Location, "must end in the field holding the image, not in a list selector"))
		}
		if changesListKey(loc) {
			errs = append(errs, field.Invalid(lp, a.Spec.Location, "cannot change the key field of a list element"))
		}
	}
	pp := a.Spec.Parameters
	if msg := validateImageParts(pp.AssignDomain, pp.AssignPath, pp.AssignTag); msg != "" {
		errs = append(errs, field.Invalid(field.NewPath("spec", "parameters"), fmt.Sprintf("assignDomain=%q assignPath=%q assignTag=%q", pp.AssignDomain, pp.AssignPath, pp.AssignTag), msg))
	}
	m.domain, m.imgPath, m.tag = pp.AssignDomain, pp.AssignPath, pp.AssignTag
	m.bindings, errs = compileApplyTo(a.Spec.ApplyTo, errs)
	m.conds, errs = compilePathTests(pp.PathTests, loc, errs)
	m.matcher, errs = compileMatch(a.Spec.Match, errs)
	if len(errs) > 0 {
		return nil, errs
	}
	return m, nil
}
