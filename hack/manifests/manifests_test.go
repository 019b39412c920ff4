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

// Package manifests_test checks the install on a stock cluster: every
// document decodes as its kind, the CRDs are the generated ones, and the
// webhooks send each plugin only what it acts on and never the server's
// own namespace or kube-system.
package manifests_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	noderestrictionv1alpha1 "github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction/apis/v1alpha1"
)

const namespace = "admitkit-system"

// load decodes every document of every manifest, strictly: a field the kind
// does not have is an error. CRDs decode as unstructured (the root module
// does not depend on apiextensions).
func load(t *testing.T) (typed []runtime.Object, crds map[string][]byte) {
	t.Helper()
	decoder := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	crds = map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for i := 0; ; i++ {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				t.Fatalf("%s, document %d: %v", f, i, err)
			}
			if u.GetKind() == "CustomResourceDefinition" {
				crds[f] = data
				continue
			}
			obj, _, err := decoder.Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("%s, document %d (%s %s): %v", f, i, u.GetKind(), u.GetName(), err)
			}
			typed = append(typed, obj)
		}
	}
	return typed, crds
}

func stripComments(doc []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(append(out, line...), '\n')
		}
	}
	return out
}

// The CRDs are the files hack/update-codegen.sh makes, byte for byte.
func TestCRDsAreGenerated(t *testing.T) {
	_, crds := load(t)
	var want []string
	for _, dir := range []string{"../../registry/settings/crds/manifests", "../../plugin/pkg/admission/locationmutator/crds/manifests"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			name := "crd-" + filepath.Base(f)
			want = append(want, name)
			generated, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(crds[name], generated) {
				t.Errorf("%s differs from %s: run hack/update-codegen.sh", name, f)
			}
		}
	}
	got := make([]string, 0, len(crds))
	for name := range crds {
		got = append(got, name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("CRD manifests %v, want the generated %v", got, want)
	}
}

// install is what the tests read of the decoded manifests.
type install struct {
	deployment *appsv1.Deployment
	config     *corev1.ConfigMap
	mutating   *admissionregistrationv1.MutatingWebhookConfiguration
	validating *admissionregistrationv1.ValidatingWebhookConfiguration
}

func read(t *testing.T) install {
	typed, _ := load(t)
	var in install
	for _, obj := range typed {
		switch o := obj.(type) {
		case *appsv1.Deployment:
			in.deployment = o
		case *corev1.ConfigMap:
			in.config = o
		case *admissionregistrationv1.MutatingWebhookConfiguration:
			in.mutating = o
		case *admissionregistrationv1.ValidatingWebhookConfiguration:
			in.validating = o
		}
	}
	if in.deployment == nil || in.config == nil || in.mutating == nil || in.validating == nil {
		t.Fatal("the manifests lack the Deployment, the ConfigMap or a webhook configuration")
	}
	return in
}

// flag returns the value of the server's --name= argument.
func (in install) flag(name string) string {
	for _, arg := range in.deployment.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(arg, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// webhook is what both kinds of webhook share.
type webhook struct {
	name, kind        string
	clientConfig      admissionregistrationv1.WebhookClientConfig
	rules             []admissionregistrationv1.RuleWithOperations
	namespaceSelector *metav1.LabelSelector
	matchConditions   []admissionregistrationv1.MatchCondition
	failurePolicy     admissionregistrationv1.FailurePolicyType
}

func (in install) webhooks() []webhook {
	var out []webhook
	for _, w := range in.mutating.Webhooks {
		out = append(out, webhook{w.Name, "mutate", w.ClientConfig, w.Rules, w.NamespaceSelector, w.MatchConditions, *w.FailurePolicy})
	}
	for _, w := range in.validating.Webhooks {
		out = append(out, webhook{w.Name, "validate", w.ClientConfig, w.Rules, w.NamespaceSelector, w.MatchConditions, *w.FailurePolicy})
	}
	return out
}

func TestWebhooks(t *testing.T) {
	in := read(t)
	if in.deployment.Namespace != namespace || *in.deployment.Spec.Replicas != 2 {
		t.Errorf("Deployment %s/%s with %d replicas, want two in %s", in.deployment.Namespace, in.deployment.Name, *in.deployment.Spec.Replicas, namespace)
	}
	if got := in.flag("mutating-webhook-configuration"); got != in.mutating.Name {
		t.Errorf("the server writes the CA bundle into %q, the manifests name %q", got, in.mutating.Name)
	}
	if got := in.flag("validating-webhook-configuration"); got != in.validating.Name {
		t.Errorf("the server writes the CA bundle into %q, the manifests name %q", got, in.validating.Name)
	}
	plugins := strings.Split(in.flag("plugins"), ",")
	for _, w := range in.webhooks() {
		t.Run(w.name, func(t *testing.T) {
			svc := w.clientConfig.Service
			if svc == nil || svc.Name != "admitkit-webhook" || svc.Namespace != namespace || svc.Path == nil {
				t.Fatalf("clientConfig %+v, want the admitkit-webhook Service with a path", w.clientConfig)
			}
			// kube-apiserver takes only lower-case service paths; the
			// server finds a plugin by its name in any case. A path names
			// one plugin or a chain of them, a segment each.
			segments, ok := strings.CutPrefix(*svc.Path, "/"+w.kind+"/")
			if !ok {
				t.Fatalf("path %s is not under /%s/", *svc.Path, w.kind)
			}
			var chain []string
			for _, lower := range strings.Split(segments, "/") {
				i := slices.IndexFunc(plugins, func(p string) bool { return strings.ToLower(p) == lower })
				if i < 0 || slices.Contains(chain, plugins[i]) {
					t.Fatalf("path %s names %q, not a plugin the server serves (%v) once", *svc.Path, lower, plugins)
				}
				chain = append(chain, plugins[i])
			}
			plugin := strings.Join(chain, "/")
			if len(w.clientConfig.CABundle) != 0 {
				t.Error("caBundle set: the server writes it")
			}
			if namespaced(w.rules) && !excludes(w.namespaceSelector, "kube-system", namespace) {
				t.Errorf("namespaceSelector %v does not exclude kube-system and %s", w.namespaceSelector, namespace)
			}
			checkScope(t, plugin, w)
		})
	}
}

// checkScope holds each plugin's webhook to what the plugin acts on.
func checkScope(t *testing.T, plugin string, w webhook) {
	t.Helper()
	type rule struct{ groups, resources, operations string }
	var got []rule
	for _, r := range w.rules {
		ops := make([]string, len(r.Operations))
		for i, op := range r.Operations {
			ops[i] = string(op)
		}
		got = append(got, rule{strings.Join(r.APIGroups, ","), strings.Join(r.Resources, ","), strings.Join(ops, ",")})
	}
	want := map[string][]rule{
		"mutate/PodPreset/LocationMutator": {{"", "pods", "CREATE"}},
		"mutate/PodPreset":                 {{"", "pods", "CREATE"}},
		"mutate/LocationMutator":           {{"*", "*", "CREATE,UPDATE"}},
		"validate/LocationMutator":         {{"mutations.gatekeeper.sh", "assign,assignmetadata,modifyset,assignimage", "CREATE,UPDATE"}, {"externaldata.gatekeeper.sh", "providers", "CREATE,UPDATE"}},
		"mutate/SettingsDefaults":          {{"settings.k8s.io", "podpresets,clusterpodpresets", "CREATE,UPDATE"}},
		"validate/SettingsValidation":      {{"settings.k8s.io", "podpresets,clusterpodpresets", "CREATE,UPDATE"}},
		// Every request of the listed accounts; its matchConditions narrow
		// it (TestNodeRestrictionRouting).
		"validate/NodeRestriction": {{"*", "*/*", "*"}},
	}[w.kind+"/"+plugin]
	if !slices.Equal(got, want) {
		t.Errorf("rules %v, want %v", got, want)
	}
	// Only LocationMutator's mutation, on every resource, fails open: a
	// failing-closed webhook there would stop every write in the cluster.
	// On pod creates it runs in one call with PodPreset, which fails
	// closed (TestPodRouting).
	wantPolicy := admissionregistrationv1.Fail
	if w.kind+"/"+plugin == "mutate/LocationMutator" {
		wantPolicy = admissionregistrationv1.Ignore
	}
	if w.failurePolicy != wantPolicy {
		t.Errorf("failurePolicy %s, want %s", w.failurePolicy, wantPolicy)
	}
}

func namespaced(rules []admissionregistrationv1.RuleWithOperations) bool {
	for _, r := range rules {
		if r.Scope == nil || *r.Scope != admissionregistrationv1.ClusterScope {
			return true
		}
	}
	return false
}

func excludes(s *metav1.LabelSelector, namespaces ...string) bool {
	if s == nil {
		return false
	}
	for _, e := range s.MatchExpressions {
		if e.Key == corev1.LabelMetadataName && e.Operator == "NotIn" {
			for _, ns := range namespaces {
				if !slices.Contains(e.Values, ns) {
					return false
				}
			}
			return true
		}
	}
	return false
}

// nodeRestriction is the NodeRestriction configuration of the server.
func (in install) nodeRestriction(t *testing.T) noderestrictionv1alpha1.Configuration {
	t.Helper()
	var cfg struct {
		Plugins []struct {
			Name          string
			Configuration noderestrictionv1alpha1.Configuration
		}
	}
	if err := yaml.Unmarshal([]byte(in.config.Data["admission-config.yaml"]), &cfg); err != nil {
		t.Fatal(err)
	}
	for _, p := range cfg.Plugins {
		if p.Name == "NodeRestriction" {
			return p.Configuration
		}
	}
	t.Fatal("no NodeRestriction configuration")
	return noderestrictionv1alpha1.Configuration{}
}

// The NodeRestriction webhook's matchCondition names exactly the
// node-scoped service accounts its configuration lists.
func TestNodeRestrictionAccounts(t *testing.T) {
	in := read(t)
	var accounts []string
	for _, sa := range in.nodeRestriction(t).NodeScopedServiceAccounts {
		accounts = append(accounts, "'system:serviceaccount:"+sa.Namespace+":"+sa.Name+"'")
	}
	want := "request.userInfo.username in [" + strings.Join(accounts, ", ") + "]"
	for _, w := range in.validating.Webhooks {
		if w.ClientConfig.Service == nil || w.ClientConfig.Service.Path == nil || *w.ClientConfig.Service.Path != "/validate/noderestriction" {
			continue
		}
		if len(w.MatchConditions) != 2 || w.MatchConditions[0].Expression != want {
			t.Errorf("matchConditions %v, want %q first, then the requests it judges", w.MatchConditions, want)
		}
		return
	}
	t.Error("no NodeRestriction webhook")
}

// The server's NodeRestriction, called for a few daemon requests, GETs the
// pods it judges them on (lookups: Requests) rather than watching every
// pod, Node and service account of the cluster: its ClusterRole lets it
// get pods, and list or watch none of the kinds NodeRestriction reads.
func TestNodeRestrictionLookups(t *testing.T) {
	in := read(t)
	if got := in.nodeRestriction(t).Lookups; got != noderestrictionv1alpha1.LookupsRequests {
		t.Errorf("NodeRestriction's lookups %q, want %q", got, noderestrictionv1alpha1.LookupsRequests)
	}
	typed, _ := load(t)
	var role *rbacv1.ClusterRole
	for _, obj := range typed {
		if r, ok := obj.(*rbacv1.ClusterRole); ok && r.Name == "admitkit-webhook" {
			role = r
		}
	}
	if role == nil {
		t.Fatal("no ClusterRole admitkit-webhook")
	}
	if !allows(role.Rules, "get", "", "pods") {
		t.Error("the server may not get pods, which NodeRestriction looks up")
	}
	lookedUp := map[string][]string{"": {"pods", "nodes", "serviceaccounts", "persistentvolumeclaims", "persistentvolumes"}, "storage.k8s.io": {"csidrivers"}}
	for group, resources := range lookedUp {
		for _, resource := range resources {
			for _, verb := range []string{"list", "watch"} {
				if allows(role.Rules, verb, group, resource) {
					t.Errorf("the server may %s %s.%s: nothing of it watches them", verb, resource, group)
				}
			}
		}
	}
}

// allows says whether rules grant verb on every object of resource in
// group.
func allows(rules []rbacv1.PolicyRule, verb, group, resource string) bool {
	for _, r := range rules {
		if len(r.ResourceNames) == 0 &&
			(slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, rbacv1.VerbAll)) &&
			(slices.Contains(r.APIGroups, group) || slices.Contains(r.APIGroups, rbacv1.APIGroupAll)) &&
			(slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, rbacv1.ResourceAll)) {
			return true
		}
	}
	return false
}

// kustomization is what the tests read of the Kustomization.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// `kubectl apply -k hack/manifests` applies every manifest, and its one
// image line names the Deployment's image, so that editing it is all a user
// does.
func TestKustomization(t *testing.T) {
	data, err := os.ReadFile("Kustomization")
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		t.Fatalf("Kustomization: %v", err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("Kustomization is %s %s, want kustomize.config.k8s.io/v1beta1 Kustomization", k.APIVersion, k.Kind)
	}
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(slices.Values(k.Resources))
	if !slices.Equal(got, files) {
		t.Errorf("Kustomization's resources %v, want every manifest %v", got, files)
	}
	image := read(t).deployment.Spec.Template.Spec.Containers[0].Image
	if len(k.Images) != 1 || k.Images[0].Name+":"+k.Images[0].NewTag != image || k.Images[0].NewName != k.Images[0].Name {
		t.Errorf("Kustomization's images %+v, want the one line naming the Deployment's image %s", k.Images, image)
	}
}

// `kubectl apply -f hack/manifests/` applies the files in name order, each
// file's documents in order. Nothing may come before what it needs: a
// namespaced object after its Namespace, the Deployment after its service
// account and its ConfigMap, so that a fresh install logs no FailedCreate
// (the ReplicaSet's pods are refused while their service account is
// missing).
func TestApplyOrder(t *testing.T) {
	typed, _ := load(t) // in file name order, then document order
	seen := map[string]bool{}
	key := func(kind, namespace, name string) string { return kind + " " + namespace + "/" + name }
	for _, obj := range typed {
		m, err := meta.Accessor(obj)
		if err != nil {
			t.Fatal(err)
		}
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		var needs []string
		if ns := m.GetNamespace(); ns != "" {
			needs = append(needs, key("Namespace", "", ns))
		}
		if d, ok := obj.(*appsv1.Deployment); ok {
			spec := d.Spec.Template.Spec
			needs = append(needs, key("ServiceAccount", d.Namespace, spec.ServiceAccountName))
			for _, v := range spec.Volumes {
				if v.ConfigMap != nil {
					needs = append(needs, key("ConfigMap", d.Namespace, v.ConfigMap.Name))
				}
			}
		}
		for _, n := range needs {
			if !seen[n] {
				t.Errorf("%s comes before %s, which it needs", key(kind, m.GetNamespace(), m.GetName()), n)
			}
		}
		seen[key(kind, m.GetNamespace(), m.GetName())] = true
	}
}
