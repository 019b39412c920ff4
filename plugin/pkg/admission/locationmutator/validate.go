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
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/match"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// Validate checks a mutator object being created or updated with the same
// decoder the live source runs it through, so that `kubectl apply` of a
// bad mutator fails with the field at fault instead of being accepted and
// never enforced. It runs only with watchMutators. A mutator whose schema
// conflicts with one this server enforces is refused naming it. Deletes
// are never checked: removing a mutator must always work.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if p.watchMutators && a.GetSubresource() == "" && isProviderResource(a.GetResource()) {
		return p.validateProvider(a)
	}
	if !p.watchMutators || a.GetSubresource() != "" || !isMutatorResource(a.GetResource()) {
		return nil
	}
	u, ok := a.GetObject().(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	gk := schema.GroupKind{Group: mutationsv1.Group, Kind: u.GetKind()}
	data, err := json.Marshal(u.Object)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("%s %q: %v", u.GetKind(), u.GetName(), err))
	}
	m, errs := mutation.DecodeJSON(data)
	if len(errs) > 0 {
		return apierrors.NewInvalid(gk, u.GetName(), errs)
	}
	for _, w := range mutatorWarnings(u) {
		warning.AddWarning(ctx, "", w)
	}
	if errs := p.conflicts(m); len(errs) > 0 {
		return apierrors.NewInvalid(gk, u.GetName(), errs)
	}
	return nil
}

func isMutatorResource(gvr schema.GroupVersionResource) bool {
	return gvr.Group == mutationsv1.Group && slices.ContainsFunc(watchedKinds, func(k watchedKind) bool { return k.gvr.Resource == gvr.Resource })
}

// conflicts returns the schema conflicts of m with the mutators this server
// enforces now (m's earlier generation aside). Before the live mutators are
// known only the configured ones are compared: a write of a mutator is
// never delayed.
func (p *Plugin) conflicts(m *mutation.Mutator) field.ErrorList {
	system := p.current.Load()
	if system == nil {
		system = p.static
	}
	var errs field.ErrorList
	for _, c := range system.ConflictsWith(m) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "location"), m.Location().String(),
			fmt.Sprintf("conflicts with %s, which this server enforces: %v", c.Other(m.ID()), c)))
	}
	return errs
}

// mutatorWarnings are what is valid but likely a mistake.
func mutatorWarnings(u *unstructured.Unstructured) []string {
	var out []string
	if scope, found, _ := unstructured.NestedString(u.Object, "spec", "match", "scope"); found && scope != "" &&
		scope != match.ScopeCluster && scope != match.ScopeNamespaced {
		out = append(out, fmt.Sprintf("spec.match.scope: %q is neither %q nor %q, so it matches both cluster-scoped and namespaced objects", scope, match.ScopeCluster, match.ScopeNamespaced))
	}
	return out
}
