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

package admitkit

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/admitkit/admitkit/test/integration/framework"
)

func checkAlwaysPull(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if c.ImagePullPolicy != corev1.PullAlways {
			t.Errorf("pod %s container %s imagePullPolicy %q, want Always", pod.Name, c.Name, c.ImagePullPolicy)
		}
	}
}

func TestLocationMutatorPods(t *testing.T) {
	ctx := context.Background()
	ns := "lm-pods"
	framework.CreateNamespace(t, server.AdminConfig(), ns, nil)
	pod := framework.Pod("web", nil, "app", "sidecar")
	pod.Spec.Containers[0].ImagePullPolicy = corev1.PullIfNotPresent
	pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.example.com/init:1", ImagePullPolicy: corev1.PullNever}}
	created, err := framework.KubeClient(t, server.AdminConfig()).CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkAlwaysPull(t, created)

	// Outside lm-* the mutators do not match: the defaulted policy stays.
	framework.CreateNamespace(t, server.AdminConfig(), "not-mutated", nil)
	plain, err := framework.KubeClient(t, server.AdminConfig()).CoreV1().Pods("not-mutated").Create(ctx, framework.Pod("web", nil, "app"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := plain.Spec.Containers[0].ImagePullPolicy; got != corev1.PullIfNotPresent {
		t.Errorf("pod outside lm-* has imagePullPolicy %q, want the default IfNotPresent", got)
	}
}

func TestLocationMutatorDeployment(t *testing.T) {
	ns := "lm-deployment"
	framework.CreateNamespace(t, server.AdminConfig(), ns, nil)
	pods := createDeployment(t, ns, "web", map[string]string{"app": "web"}, 2, "app", "sidecar", "logger")
	for i := range pods {
		checkAlwaysPull(t, &pods[i])
	}
}

func TestLocationMutatorNamespaceLabel(t *testing.T) {
	ns := framework.CreateNamespace(t, server.AdminConfig(), "lm-labelled", map[string]string{"team": "a"})
	if ns.Labels["admitkit-mutated"] != "true" || ns.Labels["team"] != "a" {
		t.Errorf("new namespace lm-labelled labels %v, want admitkit-mutated=true beside team=a", ns.Labels)
	}
	other := framework.CreateNamespace(t, server.AdminConfig(), "unlabelled", nil)
	if _, ok := other.Labels["admitkit-mutated"]; ok {
		t.Errorf("namespace unlabelled got the label: %v", other.Labels)
	}
}

// TestLocationMutatorCustomResource mutates objects of a CRD: the plugin
// runs in the apiextensions server of the chain too.
func TestLocationMutatorCustomResource(t *testing.T) {
	ctx := context.Background()
	ns := "lm-widgets"
	framework.CreateNamespace(t, server.AdminConfig(), ns, nil)
	crds, err := apiextensionsclient.NewForConfig(server.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size":  {Type: "integer"},
							"color": {Type: "string"},
						}},
					},
				}},
			}},
		},
	}
	if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(server.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	widgets := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace(ns)
	widget := func(name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name},
			"spec":     spec,
		}}
	}
	// The CRD is served a moment after it is created.
	var created *unstructured.Unstructured
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		created, err = widgets.Create(ctx, widget("sized", map[string]any{"color": "red"}), metav1.CreateOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("creating a Widget: %v", err)
	}
	if size, _, _ := unstructured.NestedInt64(created.Object, "spec", "size"); size != 3 {
		t.Errorf("widget spec %v, want size 3 assigned", created.Object["spec"])
	}
	// The pathTest keeps a size the user set.
	kept, err := widgets.Create(ctx, widget("own-size", map[string]any{"size": int64(7)}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(kept.Object, "spec", "size"); size != 7 {
		t.Errorf("widget with its own size has spec %v, want size 7 kept", kept.Object["spec"])
	}
}

// TestLocationMutatorRejects: a mutation the schema cannot hold fails the
// request with an error naming the plugin, instead of storing a broken or
// unmutated object.
func TestLocationMutatorRejects(t *testing.T) {
	ns := "lm-reject"
	framework.CreateNamespace(t, server.AdminConfig(), ns, nil)
	pod := framework.Pod("proxy", nil, "proxy")
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 9090}}
	_, err := framework.KubeClient(t, server.AdminConfig()).CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "LocationMutator") {
		t.Fatalf("creating a pod the lm-string-port mutator cannot mutate: %v, want an error naming LocationMutator", err)
	}
	t.Logf("rejected: %v", err)
}

// TestLocationMutatorBadConfig starts servers with broken configurations:
// each must fail start-up with the mutator and field named.
func TestLocationMutatorBadConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("starts more servers")
	}
	for _, tc := range []struct {
		name     string
		mutators string
		want     []string
	}{
		{
			name: "bad location",
			mutators: `    - apiVersion: mutations.gatekeeper.sh/v1
      kind: Assign
      metadata: {name: broken-path}
      spec:
        applyTo: [{groups: [""], kinds: [Pod], versions: [v1]}]
        location: "spec.containers[name:*.imagePullPolicy"
        parameters: {assign: {value: Always}}
`,
			want: []string{"broken-path", "spec.location"},
		},
		{
			name: "unknown field",
			mutators: `    - apiVersion: mutations.gatekeeper.sh/v1
      kind: Assign
      metadata: {name: typo}
      spec:
        applyTo: [{groups: [""], kinds: [Pod], versions: [v1]}]
        location: "spec.priorityClassName"
        parameters: {asign: {value: high}}
`,
			want: []string{"typo", "asign"},
		},
		{
			name: "conflicting pair",
			mutators: `    - apiVersion: mutations.gatekeeper.sh/v1
      kind: Assign
      metadata: {name: as-list}
      spec:
        applyTo: [{groups: [""], kinds: [Pod], versions: [v1]}]
        location: "spec.containers[name:*].imagePullPolicy"
        parameters: {assign: {value: Always}}
    - apiVersion: mutations.gatekeeper.sh/v1
      kind: Assign
      metadata: {name: as-object}
      spec:
        applyTo: [{groups: [""], kinds: [Pod], versions: [v1]}]
        location: "spec.containers.imagePullPolicy"
        parameters: {assign: {value: Never}}
`,
			want: []string{"as-list", "as-object"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			framework.MustFailToStart(t, framework.Config{
				AdmissionConfig: locationMutatorConfig(tc.mutators),
				Args:            []string{"--enable-admission-plugins=LocationMutator"},
			}, tc.want...)
		})
	}
}
