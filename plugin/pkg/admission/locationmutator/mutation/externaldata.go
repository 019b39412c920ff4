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
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/externaldata"
)

// Gatekeeper's externalData values: where the key comes from, and what a
// failed lookup does.
const (
	DataSourceValueAtLocation = "ValueAtLocation"
	DataSourceUsername        = "Username"

	FailurePolicyUseDefault = "UseDefault"
	FailurePolicyIgnore     = "Ignore"
	FailurePolicyFail       = "Fail"
)

// externalRef is a compiled externalData: the value written is what the
// provider answers for the key.
type externalRef struct {
	provider      string
	fromUsername  bool
	failurePolicy string
	deflt         string
}

// compileExternalData validates an externalData the way Gatekeeper does,
// with its defaults (ValueAtLocation, Fail): UseDefault needs a default,
// and a provider's answer is a string, which a list element cannot take.
func compileExternalData(e *mutationsv1.ExternalData, p *field.Path, listElement bool, errs field.ErrorList) (*externalRef, field.ErrorList) {
	ref := &externalRef{provider: e.Provider, failurePolicy: e.FailurePolicy, deflt: e.Default}
	switch {
	case e.Provider == "":
		errs = append(errs, field.Required(p.Child("provider"), "the name of a Provider"))
	default:
		for _, msg := range validation.IsDNS1123Subdomain(e.Provider) {
			errs = append(errs, field.Invalid(p.Child("provider"), e.Provider, msg))
		}
	}
	switch e.DataSource {
	case "", DataSourceValueAtLocation:
	case DataSourceUsername:
		ref.fromUsername = true
	default:
		errs = append(errs, field.NotSupported(p.Child("dataSource"), e.DataSource, []string{DataSourceValueAtLocation, DataSourceUsername}))
	}
	switch e.FailurePolicy {
	case "":
		ref.failurePolicy = FailurePolicyFail
	case FailurePolicyIgnore, FailurePolicyFail:
	case FailurePolicyUseDefault:
		if e.Default == "" {
			errs = append(errs, field.Required(p.Child("default"), "failurePolicy UseDefault needs a default"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), e.FailurePolicy, []string{FailurePolicyUseDefault, FailurePolicyIgnore, FailurePolicyFail}))
	}
	if listElement {
		errs = append(errs, field.Invalid(p, e.Provider, "cannot assign a provider's answer, a string, to a list element"))
	}
	return ref, errs
}

// External carries what a request's external-data mutators read: the
// requester's name and the providers' answers. A mutator that reaches its
// location and finds no answer for its key yet writes nothing and notes
// the key; the plugin then asks each provider once for all the keys noted
// and runs the mutators again (Mutate with Options.External), as many
// rounds as the answers lead to new keys, up to a bound.
type External struct {
	username string
	answers  map[string]map[string]externaldata.Answer
	wanted   map[string]map[string]struct{}
	// written holds, per provider, the values written from its answers in
	// this request: found at the location on a later pass, such a value
	// is the mutator's own result, not a new key. Gatekeeper gets the same
	// by keeping the first key in a placeholder until every pass is done.
	written map[string]map[string]struct{}
	final   bool
}

// NewExternal starts the external data of a request by username.
func NewExternal(username string) *External {
	return &External{username: username, answers: map[string]map[string]externaldata.Answer{}}
}

// Wanted returns the keys noted since the last Add, by provider, and
// forgets them.
func (x *External) Wanted() map[string][]string {
	out := make(map[string][]string, len(x.wanted))
	for p, keys := range x.wanted {
		for k := range keys {
			out[p] = append(out[p], k)
		}
	}
	x.wanted = nil
	return out
}

// Add records answers (provider -> key -> answer).
func (x *External) Add(answers map[string]map[string]externaldata.Answer) {
	for p, byKey := range answers {
		if x.answers[p] == nil {
			x.answers[p] = map[string]externaldata.Answer{}
		}
		for k, a := range byKey {
			x.answers[p][k] = a
		}
	}
}

// Finish makes every key still without an answer fail, so that the last
// round ends with each mutator's failure policy applied.
func (x *External) Finish() { x.final = true }

var errNoExternal = errors.New("external data cannot be fetched where these mutators run")

// lookup returns the answer for key, or false after noting the key.
func (x *External) lookup(provider, key string) (externaldata.Answer, bool) {
	if x == nil {
		return externaldata.Answer{Err: errNoExternal}, true
	}
	if a, ok := x.answers[provider][key]; ok {
		return a, true
	}
	if x.final {
		return externaldata.Answer{Err: fmt.Errorf("external data provider %q: no answer for %q within the rounds allowed", provider, key)}, true
	}
	if x.wanted == nil {
		x.wanted = map[string]map[string]struct{}{}
	}
	if x.wanted[provider] == nil {
		x.wanted[provider] = map[string]struct{}{}
	}
	x.wanted[provider][key] = struct{}{}
	return externaldata.Answer{}, false
}

func (x *External) isWritten(provider, value string) bool {
	if x == nil {
		return false
	}
	_, ok := x.written[provider][value]
	return ok
}

func (x *External) noteWritten(provider, value string) {
	if x == nil {
		return
	}
	if x.written == nil {
		x.written = map[string]map[string]struct{}{}
	}
	if x.written[provider] == nil {
		x.written[provider] = map[string]struct{}{}
	}
	x.written[provider][value] = struct{}{}
}

// writeExternal writes the provider's answer for the key: the string at
// the location (nothing there is the empty key, as in Gatekeeper) or the
// requester's name. Without an answer yet it writes nothing; a failed
// answer is decided by the failure policy: Fail refuses the object,
// Ignore keeps the key as the value, UseDefault writes the default.
func (r *externalRef) write(m *Mutator, s slot, exists bool, md requestMeta) (effect, error) {
	key := md.external.usernameOr("")
	if !r.fromUsername {
		key = ""
		if exists {
			v, ok := s.str()
			if !ok {
				return effect{}, m.fail(fmt.Errorf("external data needs a string at the location, found %s", s.typeName()))
			}
			key = v
		}
		if md.external.isWritten(r.provider, key) {
			return effect{}, nil
		}
	}
	a, ok := md.external.lookup(r.provider, key)
	if !ok {
		return effect{}, nil
	}
	value := a.Value
	if a.Err != nil {
		switch r.failurePolicy {
		case FailurePolicyIgnore:
			klog.V(4).InfoS("LocationMutator ignores a failed external data lookup", "mutator", m.id, "key", key, "err", a.Err)
			value = key
		case FailurePolicyUseDefault:
			klog.V(4).InfoS("LocationMutator writes the default for a failed external data lookup", "mutator", m.id, "key", key, "err", a.Err)
			value = r.deflt
		default:
			return effect{}, m.fail(a.Err)
		}
	}
	md.external.noteWritten(r.provider, value)
	if exists && s.holds(value) {
		return effect{}, nil
	}
	e, err := s.set(value)
	if err != nil {
		return e, m.fail(err)
	}
	return e, nil
}

// WrittenValues returns the values written from the answers, sorted.
func (x *External) WrittenValues() []string {
	var out []string
	for _, vs := range x.written {
		for v := range vs {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (x *External) usernameOr(s string) string {
	if x == nil {
		return s
	}
	return x.username
}

func (r *externalRef) summary(where string) string {
	source := "its value"
	if r.fromUsername {
		source = "the requester's name"
	}
	return fmt.Sprintf("set %s to what provider %q answers for %s", where, r.provider, source)
}

// UsesExternalData reports whether the mutator asks a provider for its
// value.
func (m *Mutator) UsesExternalData() bool {
	a, ok := m.op.(interface{ externalRef() *externalRef })
	return ok && a.externalRef() != nil
}

func (a assignment) externalRef() *externalRef { return a.external }
