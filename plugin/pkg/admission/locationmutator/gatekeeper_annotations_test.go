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
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	admissiontesting "k8s.io/apiserver/pkg/admission/testing"
)

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func TestGatekeeperMutationAnnotations(t *testing.T) {
	mutated := func() runtime.Object { return threeContainerPod() }
	unchanged := func() runtime.Object {
		pod := threeContainerPod()
		for i := range pod.Spec.Containers {
			pod.Spec.Containers[i].ImagePullPolicy = corev1.PullAlways
		}
		pod.Labels["owner"] = "platform"
		return pod
	}
	// Gatekeeper names every mutator that reached its location in a pass
	// that changed the object: the Assign that finds Always already set is
	// named beside the AssignMetadata that added the label; an
	// AssignMetadata whose label is there never reaches it (its location
	// must not exist), so it is not named beside the Assign.
	pulling := func() runtime.Object {
		pod := threeContainerPod()
		for i := range pod.Spec.Containers {
			pod.Spec.Containers[i].ImagePullPolicy = corev1.PullAlways
		}
		return pod
	}
	owned := func() runtime.Object {
		pod := threeContainerPod()
		pod.Labels["owner"] = "platform"
		return pod
	}
	cases := []struct {
		name    string
		enabled bool
		obj     func(testing.TB) runtime.Object
		// want is gatekeeper.sh/mutations; empty when neither annotation
		// may be there.
		want string
	}{
		{name: "typed pod", enabled: true, obj: func(testing.TB) runtime.Object { return mutated() },
			want: "Assign//always-pull:0, AssignMetadata//owner:3"},
		{name: "unstructured pod", enabled: true, obj: func(tb testing.TB) runtime.Object { return asUnstructured(tb, mutated()) },
			want: "Assign//always-pull:0, AssignMetadata//owner:3"},
		{name: "a mutator finding its value already there", enabled: true, obj: func(testing.TB) runtime.Object { return pulling() },
			want: "Assign//always-pull:0, AssignMetadata//owner:3"},
		{name: "a label already there", enabled: true, obj: func(testing.TB) runtime.Object { return owned() },
			want: "Assign//always-pull:0"},
		{name: "nothing changed", enabled: true, obj: func(testing.TB) runtime.Object { return unchanged() }},
		{name: "off by default", obj: func(testing.TB) runtime.Object { return mutated() }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkGatekeeperAnnotations(t, tc.enabled, tc.obj(t), tc.want) })
	}
}

// checkGatekeeperAnnotations admits obj with the always-pull Assign and the
// owner AssignMetadata at generation 3, with mutationAnnotations enabled or
// not: gatekeeper.sh/mutations must be want, and gatekeeper.sh/mutation-id
// a UUID exactly when want is not empty.
func checkGatekeeperAnnotations(t *testing.T, enabled bool, obj runtime.Object, want string) {
	cfg := config(pullAlways, strings.Replace(ownerLabel, "metadata: {name: owner}", "metadata: {name: owner, generation: 3}", 1))
	if enabled {
		cfg += "mutationAnnotations: true\n"
	}
	plugins := admission.NewPlugins()
	Register(plugins)
	p, err := plugins.NewFromPlugins([]string{PluginName}, configProvider{PluginName: cfg}, admission.PluginInitializers{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := attrs(obj, podGVK, podGVR, "prod", "web", admission.Create, "")
	o := admission.NewObjectInterfacesFromScheme(testScheme(t))
	// The second invocation changes nothing, so it must leave the
	// first one's annotations as they are.
	if err := admissiontesting.WithReinvocationTesting(t, p.(admission.MutationInterface)).Admit(context.Background(), a, o); err != nil {
		t.Fatal(err)
	}
	accessor, err := meta.Accessor(a.GetObject())
	if err != nil {
		t.Fatal(err)
	}
	annotations := accessor.GetAnnotations()
	if got := annotations[MutationsAnnotation]; got != want {
		t.Errorf("%s = %q, want %q", MutationsAnnotation, got, want)
	}
	id, ok := annotations[MutationIDAnnotation]
	if ok != (want != "") || (ok && !uuidPattern.MatchString(id)) {
		t.Errorf("%s = %q (set: %v), want a UUID only on a mutated object", MutationIDAnnotation, id, ok)
	}
}
