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
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	admissiontesting "k8s.io/apiserver/pkg/admission/testing"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

func TestRegister(t *testing.T) {
	plugins := admission.NewPlugins()
	Register(plugins)
	p, err := plugins.NewFromPlugins([]string{PluginName}, configProvider{PluginName: config(pullAlways)}, admission.PluginInitializers{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Handles(admission.Create) || !p.Handles(admission.Update) || p.Handles(admission.Delete) {
		t.Fatal("the plugin must handle CREATE and UPDATE only")
	}
	// A bad config stops start-up with the mutator and the field named.
	_, err = plugins.NewFromPlugins([]string{PluginName}, configProvider{PluginName: config(strings.Replace(pullAlways, "name:*", "*", 1))}, admission.PluginInitializers{}, nil)
	if err == nil || !strings.Contains(err.Error(), `Assign "always-pull": spec.location: Invalid value`) {
		t.Fatalf("error %v", err)
	}
}

type configProvider map[string]string

func (c configProvider) ConfigFor(name string) (io.Reader, error) {
	return strings.NewReader(c[name]), nil
}

func TestAdmitTypedPod(t *testing.T) {
	p := newTestPlugin(t, config(pullAlways, ownerLabel))
	o := admission.NewObjectInterfacesFromScheme(testScheme(t))
	pod := threeContainerPod()
	a := record(attrs(pod, podGVK, podGVR, "prod", "web", admission.Create, ""))
	if err := admissiontesting.WithReinvocationTesting(t, p).Admit(context.Background(), a, o); err != nil {
		t.Fatal(err)
	}
	got := a.GetObject().(*corev1.Pod)
	for _, c := range got.Spec.Containers {
		if c.ImagePullPolicy != corev1.PullAlways {
			t.Errorf("container %s: imagePullPolicy %q", c.Name, c.ImagePullPolicy)
		}
	}
	if got.Labels["owner"] != "platform" || got.Labels["app"] != "web" {
		t.Errorf("labels %v", got.Labels)
	}
	if got.Spec.Containers[1].Ports[0].ContainerPort != 8080 {
		t.Error("untouched fields must survive the round trip")
	}
	if v := a.annotations[AnnotationKey]; v != "Assign/always-pull,AssignMetadata/owner" {
		t.Errorf("annotation %q", v)
	}
}

func TestAdmitSkips(t *testing.T) {
	p := newTestPlugin(t, config(pullAlways))
	o := admission.NewObjectInterfacesFromScheme(testScheme(t))
	tests := []struct {
		name string
		a    admission.Attributes
	}{
		{"excluded namespace", attrs(threeContainerPod(), podGVK, podGVR, "kube-system", "web", admission.Create, "")},
		{"subresource", attrs(threeContainerPod(), podGVK, podGVR, "prod", "web", admission.Update, "status")},
		{"other kind", attrs(&corev1.ConfigMap{}, corev1.SchemeGroupVersion.WithKind("ConfigMap"), corev1.SchemeGroupVersion.WithResource("configmaps"), "prod", "c", admission.Create, "")},
		{"delete", attrs(nil, podGVK, podGVR, "prod", "web", admission.Delete, "")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := record(tc.a)
			var before any
			if tc.a.GetObject() != nil {
				before = tc.a.GetObject().DeepCopyObject()
			}
			if err := admissiontesting.WithReinvocationTesting(t, p).Admit(context.Background(), r, o); err != nil {
				t.Fatal(err)
			}
			if tc.a.GetObject() != nil {
				if pod, ok := tc.a.GetObject().(*corev1.Pod); ok && pod.Spec.Containers[0].ImagePullPolicy != before.(*corev1.Pod).Spec.Containers[0].ImagePullPolicy {
					t.Fatal("object changed")
				}
			}
			if len(r.annotations) != 0 {
				t.Fatalf("annotations %v", r.annotations)
			}
		})
	}
}

func TestAdmitRejects(t *testing.T) {
	// A string key where the schema has an integer: the element the
	// mutator would create cannot be a Pod's, and the request fails naming
	// the mutator, the element and the field's type.
	bad := `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: string-port}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: 'spec.containers[name: proxy].ports[containerPort: "9090"].protocol'
  parameters: {assign: {value: TCP}}`
	p := newTestPlugin(t, config(bad))
	o := admission.NewObjectInterfacesFromScheme(testScheme(t))
	err := p.Admit(context.Background(), attrs(threeContainerPod(), podGVK, podGVR, "prod", "web", admission.Create, ""), o)
	for _, want := range []string{`Assign/string-port "spec.containers[name: proxy].ports[containerPort: \"9090\"].protocol"`, `key containerPort: "9090" does not fit in a field of type int32`, `pods "web"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v does not name %q", err, want)
		}
	}
	t.Log(err)
	if strings.Contains(err.Error(), "Kind=") {
		t.Fatalf("error %v prints the kind as Go does", err)
	}

	// With an innocent mutator changing the pod too, only the guilty one is
	// named.
	p = newTestPlugin(t, config(bad, pullAlways))
	err = p.Admit(context.Background(), attrs(threeContainerPod(), podGVK, podGVR, "prod", "web", admission.Create, ""), o)
	if err == nil || !strings.Contains(err.Error(), "Assign/string-port") || strings.Contains(err.Error(), "always-pull") {
		t.Fatalf("error %v", err)
	}
}

func TestAdmitCustomResource(t *testing.T) {
	crd := `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: widget-size}
spec:
  applyTo: [{groups: [example.com], versions: [v1], kinds: [Widget]}]
  location: 'spec.parts[name: bolt].size'
  parameters:
    pathTests: [{subPath: 'spec.parts[name: bolt].size', condition: MustNotExist}]
    assign: {value: 10}`
	p := newTestPlugin(t, config(crd))
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "prod"},
		"spec":     map[string]any{"parts": []any{map[string]any{"name": "nut", "size": int64(3)}}},
	}}
	a := record(attrs(u, gvk, gvk.GroupVersion().WithResource("widgets"), "prod", "w", admission.Create, ""))
	if err := admissiontesting.WithReinvocationTesting(t, p).Admit(context.Background(), a, admission.NewObjectInterfacesFromScheme(testScheme(t))); err != nil {
		t.Fatal(err)
	}
	parts, _, _ := unstructured.NestedSlice(a.GetObject().(*unstructured.Unstructured).Object, "spec", "parts")
	if len(parts) != 2 || parts[1].(map[string]any)["size"] != int64(10) {
		t.Fatalf("parts %v", parts)
	}
	if a.annotations[AnnotationKey] != "Assign/widget-size" {
		t.Fatalf("annotations %v", a.annotations)
	}
}

func TestNamespaceSelector(t *testing.T) {
	label := `apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata: {name: tier}
spec:
  match: {namespaceSelector: {matchLabels: {tier: gold}}}
  location: metadata.labels.tier
  parameters: {assign: {value: gold}}`
	p := newTestPlugin(t, config(label))
	if err := p.ValidateInitialization(); err == nil {
		t.Fatal("a namespaceSelector without a Namespace lister must fail initialization")
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = idx.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod", Labels: map[string]string{"tier": "gold"}}})
	_ = idx.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dev"}})
	p.namespaceLister = corev1listers.NewNamespaceLister(idx)
	if err := p.ValidateInitialization(); err != nil {
		t.Fatal(err)
	}
	o := admission.NewObjectInterfacesFromScheme(testScheme(t))
	for _, tc := range []struct {
		ns      string
		want    string
		wantErr bool
	}{{"prod", "gold", false}, {"dev", "", false}, {"missing", "", true}} {
		t.Run(tc.ns, func(t *testing.T) {
			pod := threeContainerPod()
			pod.Namespace = tc.ns
			err := admissiontesting.WithReinvocationTesting(t, p).Admit(context.Background(), attrs(pod, podGVK, podGVR, tc.ns, "web", admission.Create, ""), o)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v", err)
			}
			if pod.Labels["tier"] != tc.want {
				t.Fatalf("labels %v", pod.Labels)
			}
		})
	}
	// A Namespace is matched by its own labels, even before it exists.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "new", Labels: map[string]string{"tier": "gold"}}}
	nsGVK := corev1.SchemeGroupVersion.WithKind("Namespace")
	if err := p.Admit(context.Background(), attrs(ns, nsGVK, corev1.SchemeGroupVersion.WithResource("namespaces"), "", "new", admission.Create, ""), o); err != nil {
		t.Fatal(err)
	}
}

// kube-apiserver gives a Namespace request its own name as namespace
// (/api/v1/namespaces/<name>), on UPDATE but not on CREATE. Gatekeeper
// clears it, so a Namespace is cluster-scoped and fromMetadata namespace
// reads "" either way.
func TestNamespaceObjectHasNoNamespace(t *testing.T) {
	label := `apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata: {name: ns-label}
spec:
  match: {scope: Cluster, kinds: [{apiGroups: [""], kinds: [Namespace]}]}
  location: metadata.labels.ns
  parameters: {assign: {fromMetadata: {field: namespace}}}`
	p := newTestPlugin(t, config(label))
	o := admission.NewObjectInterfacesFromScheme(testScheme(t))
	nsGVK := corev1.SchemeGroupVersion.WithKind("Namespace")
	nsGVR := corev1.SchemeGroupVersion.WithResource("namespaces")
	for _, op := range []admission.Operation{admission.Create, admission.Update} {
		t.Run(string(op), func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}
			requestNamespace := ""
			if op == admission.Update {
				requestNamespace = "team-a"
			}
			err := admissiontesting.WithReinvocationTesting(t, p).Admit(context.Background(), attrs(ns, nsGVK, nsGVR, requestNamespace, "team-a", op, ""), o)
			if err != nil {
				t.Fatal(err)
			}
			if v, ok := ns.Labels["ns"]; !ok || v != "" {
				t.Fatalf("labels %v, want ns set to the empty namespace", ns.Labels)
			}
		})
	}
}

// Manifests in Gatekeeper's own shapes load from a file unchanged and do
// what Gatekeeper does with them, including a sidecar Assign and an
// AssignImage that both touch the sidecar (they settle, the image wins).
func TestGatekeeperShapedManifests(t *testing.T) {
	abs, err := filepath.Abs("testdata/gatekeeper-shapes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := newTestPlugin(t, "apiVersion: locationmutator.admission.admitkit.io/v1alpha1\nkind: Configuration\nmutatorFiles: ["+abs+"]\n")
	if p.current.Load().Len() != 10 {
		t.Fatalf("%d mutators loaded", p.current.Load().Len())
	}
	pod := threeContainerPod()
	pod.Name, pod.Namespace = "web-1", "shop"
	pod.Spec.Containers[0].Args = []string{"--alsologtostderr", "-v=2"}
	a := record(attrs(pod, podGVK, podGVR, "shop", "web-1", admission.Create, ""))
	if err := admissiontesting.WithReinvocationTesting(t, p).Admit(context.Background(), a, admission.NewObjectInterfacesFromScheme(testScheme(t))); err != nil {
		t.Fatal(err)
	}
	if pod.Annotations["owner"] != "admin" || pod.Labels["namespace"] != "shop" || pod.Labels["owner"] != "" {
		t.Errorf("metadata %v %v", pod.Annotations, pod.Labels)
	}
	app, proxy := pod.Spec.Containers[0], pod.Spec.Containers[1]
	if app.SecurityContext == nil || app.SecurityContext.Privileged == nil || *app.SecurityContext.Privileged {
		t.Errorf("app securityContext %+v", app.SecurityContext)
	}
	if len(app.Args) != 1 || app.Args[0] != "-v=2" {
		t.Errorf("app args %v", app.Args)
	}
	if len(app.Env) != 1 || app.Env[0].Name != "CREATED_AT" {
		t.Errorf("app env %v", app.Env)
	}
	if proxy.Image != "mirror.example.com/proxy@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" || proxy.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("proxy %+v", proxy)
	}
	if pod.Spec.DNSConfig == nil || len(pod.Spec.DNSConfig.Nameservers) != 1 {
		t.Errorf("dnsConfig %+v", pod.Spec.DNSConfig)
	}
	// On UPDATE the whole-element Assign replaces the sidecar again and
	// drops the env the CREATE-only mutator gave it, as in Gatekeeper;
	// from then on the pod is a fixed point.
	o := admission.NewObjectInterfacesFromScheme(testScheme(t))
	if err := p.Admit(context.Background(), attrs(pod, podGVK, podGVR, "shop", "web-1", admission.Update, ""), o); err != nil {
		t.Fatal(err)
	}
	if env := pod.Spec.Containers[1].Env; len(env) != 0 {
		t.Errorf("proxy env %v after UPDATE", env)
	}
	before := pod.DeepCopy()
	if err := p.Admit(context.Background(), attrs(pod, podGVK, podGVR, "shop", "web-1", admission.Update, ""), o); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(before, pod) {
		t.Errorf("a pod at its fixed point changed on UPDATE: %s", cmp.Diff(before, pod))
	}
}

// The benchmark's ten mutators all take the typed path, and Admit gives the
// same pod and the same audit annotation as on the pod's unstructured form.
func TestAdmitTypedMatchesUnstructured(t *testing.T) {
	o := admission.NewObjectInterfacesFromScheme(testScheme(t))
	typed := newTestPlugin(t, config(tenPodMutators(t)...))
	unstr := newTestPlugin(t, config(tenPodMutators(t)...))

	pod := threeContainerPod()
	target := typed.target(attrs(pod, podGVK, podGVR, "prod", "web", admission.Create, ""), pod)
	if _, err := mutation.Mutate(typed.current.Load().Candidates(podGVK, "CREATE"), pod.DeepCopy(), &target, mutation.Options{}); err != nil {
		t.Fatalf("the ten mutators must run typed: %v", err)
	}

	for _, op := range []admission.Operation{admission.Create, admission.Update} {
		a1 := record(attrs(threeContainerPod(), podGVK, podGVR, "prod", "web", op, ""))
		a2 := record(attrs(asUnstructured(t, threeContainerPod()), podGVK, podGVR, "prod", "web", op, ""))
		if err := admissiontesting.WithReinvocationTesting(t, typed).Admit(context.Background(), a1, o); err != nil {
			t.Fatal(err)
		}
		if err := admissiontesting.WithReinvocationTesting(t, unstr).Admit(context.Background(), a2, o); err != nil {
			t.Fatal(err)
		}
		fromUnstructured := asPod(t, a2.GetObject())
		if d := cmp.Diff(fromUnstructured, a1.GetObject()); d != "" || !equality.Semantic.DeepEqual(a1.GetObject(), fromUnstructured) {
			t.Errorf("%s: typed and unstructured paths differ (-unstructured +typed):\n%s", op, d)
		}
		if a1.annotations[AnnotationKey] != a2.annotations[AnnotationKey] || a1.annotations[AnnotationKey] == "" {
			t.Errorf("%s: annotations %q and %q", op, a1.annotations[AnnotationKey], a2.annotations[AnnotationKey])
		}
	}
}
