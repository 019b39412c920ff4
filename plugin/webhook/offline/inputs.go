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

package offline

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

// Inputs are the cluster state objects are admitted against.
type Inputs struct {
	Presets        []*settingsv1alpha1.PodPreset
	ClusterPresets []*settingsv1alpha1.ClusterPodPreset
	// Namespaces are the namespaces selectors read. A namespace an object
	// is admitted in must be among them when a cluster preset's or a
	// mutator's namespaceSelector reads namespaces: a missing one is an
	// error naming it, never a silent non-match.
	Namespaces []*corev1.Namespace
	// Mutators are Gatekeeper mutator objects (mutations.gatekeeper.sh), as
	// they would be applied to the API.
	Mutators []*unstructured.Unstructured
	// LocationMutatorConfig is the LocationMutator's plugin configuration
	// (locationmutator.admission.admitkit.io/v1alpha1 Configuration), nil
	// for none. watchMutators is turned on, as the webhook server runs it,
	// so that Mutators are enforced beside the configuration's own.
	LocationMutatorConfig []byte
}

// InputError is a bad input: a preset, mutator or configuration the server
// would refuse, or a namespace an object needs but not given.
type InputError struct {
	// Object names the input at fault ("PodPreset shop/allow-database").
	Object string
	Err    error
}

func (e *InputError) Error() string {
	return fmt.Sprintf("%s: %v", e.Object, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }

// readsNamespaces reports whether a selector of the inputs reads
// namespaces' labels.
func (in *Inputs) readsNamespaces() bool {
	for _, p := range in.ClusterPresets {
		if sel := p.Spec.NamespaceSelector; len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0 {
			return true
		}
	}
	for _, m := range in.Mutators {
		if _, found, _ := unstructured.NestedFieldNoCopy(m.Object, "spec", "match", "namespaceSelector"); found {
			return true
		}
	}
	return false
}
