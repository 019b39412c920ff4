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
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/admitkit/admitkit/plugin/internal/admissiontest"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

var (
	podGVK = corev1.SchemeGroupVersion.WithKind("Pod")
	podGVR = corev1.SchemeGroupVersion.WithResource("pods")
)

// config wraps mutator manifests in a Configuration, as list items.
func config(mutators ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: locationmutator.admission.admitkit.io/v1alpha1\nkind: Configuration\nmutators:\n")
	for _, m := range mutators {
		for i, line := range strings.Split(strings.TrimSpace(m), "\n") {
			if i == 0 {
				b.WriteString("- " + line + "\n")
			} else {
				b.WriteString("  " + line + "\n")
			}
		}
	}
	return b.String()
}

// pullAlways and deploymentOnlyAssigns' format live in testdata, which
// test/bench/gatekeeper reads too, so both benchmark the same mutators.
var pullAlways = readTestdata("pull-always.yaml")

// readTestdata returns a file of testdata without its final newline. A
// file it cannot read gives a document that fails to decode, naming it.
func readTestdata(name string) string {
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		return fmt.Sprintf("unreadable testdata: %v", err)
	}
	return strings.TrimSuffix(string(data), "\n")
}

const ownerLabel = `apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata: {name: owner}
spec:
  match: {kinds: [{apiGroups: [""], kinds: [Pod]}]}
  location: metadata.labels.owner
  parameters: {assign: {value: platform}}`

// systemFromConfig builds the system of a configuration as the plugin's
// factory does.
func systemFromConfig(r io.Reader) (*mutation.System, error) {
	p, err := newConfiguredPlugin(r)
	if err != nil {
		return nil, err
	}
	return p.static, nil
}

func newTestPlugin(t testing.TB, cfg string) *Plugin {
	t.Helper()
	s, err := systemFromConfig(strings.NewReader(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return NewPlugin(s)
}

func testScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	return admissiontest.Scheme(t, corev1.AddToScheme)
}

func attrs(obj runtime.Object, gvk schema.GroupVersionKind, gvr schema.GroupVersionResource, ns, name string, op admission.Operation, sub string) admission.Attributes {
	var opts runtime.Object = &metav1.CreateOptions{}
	if op == admission.Update {
		opts = &metav1.UpdateOptions{}
	}
	return admission.NewAttributesRecord(obj, nil, gvk, ns, name, gvr, sub, op, opts, false, &user.DefaultInfo{Name: "alice"})
}

func threeContainerPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "nginx:1.27", Args: []string{"--alsologtostderr", "-v=2"}},
			{Name: "proxy", Image: "envoyproxy/envoy:v1", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}},
			{Name: "log", Image: "docker.io/fluent/fluent-bit:3", ImagePullPolicy: corev1.PullIfNotPresent},
		}},
	}
}

// recorder keeps the audit annotations a plugin adds.
type recorder struct {
	admission.Attributes
	annotations map[string]string
}

func record(a admission.Attributes) *recorder {
	return &recorder{Attributes: a, annotations: map[string]string{}}
}

func (r *recorder) AddAnnotation(k, v string) error {
	r.annotations[k] = v
	return r.Attributes.AddAnnotation(k, v)
}

// asUnstructured is obj's unstructured form, as a custom resource arrives.
func asUnstructured(tb testing.TB, obj runtime.Object) *unstructured.Unstructured {
	tb.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		tb.Fatal(err)
	}
	return &unstructured.Unstructured{Object: content}
}

// asPod decodes an unstructured pod back.
func asPod(tb testing.TB, obj runtime.Object) *corev1.Pod {
	tb.Helper()
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		tb.Fatalf("%T is not unstructured", obj)
	}
	pod := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pod); err != nil {
		tb.Fatal(err)
	}
	return pod
}
