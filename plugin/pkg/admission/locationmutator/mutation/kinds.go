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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/admitkit/admitkit/plugin/internal/strictdecode"
	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
)

// Kind is one of Gatekeeper's mutator kinds: how its manifests are named
// and served, and how one is decoded into a Mutator. The decoder, the live
// watch and apply-time validation all read Kinds; adding a kind is adding
// an entry here and its constructor.
type Kind struct {
	// Name is the kind, as manifests spell it.
	Name string
	// Versions are the versions of mutations.gatekeeper.sh that serve it,
	// the one the live source reads first.
	Versions []string
	// Resource is the plural of its CRD (Gatekeeper's plurals are the
	// singular words).
	Resource string
	decode   func(data []byte) (*Mutator, field.ErrorList, error)
}

// GVR is the resource the live source watches the kind at.
func (k Kind) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: mutationsv1.Group, Version: k.Versions[0], Resource: k.Resource}
}

// Kinds are the mutator kinds, in kind order (the run order's first key).
var Kinds = []Kind{
	{mutationsv1.KindAssign, []string{"v1", "v1beta1", "v1alpha1"}, "assign", decodeAs(newAssign)},
	{mutationsv1.KindAssignImage, []string{"v1alpha1"}, "assignimage", decodeAs(newAssignImage)},
	{mutationsv1.KindAssignMetadata, []string{"v1", "v1beta1", "v1alpha1"}, "assignmetadata", decodeAs(newAssignMetadata)},
	{mutationsv1.KindModifySet, []string{"v1", "v1beta1", "v1alpha1"}, "modifyset", decodeAs(newModifySet)},
}

// kindNamed returns the kind called name.
func kindNamed(name string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// kindNames are the kinds' names, for messages.
func kindNames() []string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		out[i] = k.Name
	}
	return out
}

// decodeAs decodes a manifest strictly into a T and validates it with build.
func decodeAs[T any](build func(*T) (*Mutator, field.ErrorList)) func([]byte) (*Mutator, field.ErrorList, error) {
	return func(data []byte) (*Mutator, field.ErrorList, error) {
		var obj T
		if err := strictdecode.JSON(data, &obj); err != nil {
			return nil, nil, err
		}
		m, errs := build(&obj)
		m, errs = withMode(m, any(&obj).(metav1.Object), errs)
		return m, errs, nil
	}
}
