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

package manifests_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// chart is the Helm chart of the same install.
const chart = "../chart/admitkit"

// checksumAnnotation is the one thing the chart adds to hack/manifests: the
// pod template's hash of the plugins' configuration, so that helm upgrade
// rolls the replicas when it changes (the server reads it at start).
const checksumAnnotation = "checksum/admission-config"

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helm runs the helm that hack/tools/go.mod pins ($HELM if set: hack/test.sh
// builds it beside other steps), and returns what it printed.
func helm(t *testing.T, args ...string) []byte {
	t.Helper()
	helmOnce.Do(func() {
		if helmPath = os.Getenv("HELM"); helmPath != "" {
			return
		}
		cmd := exec.Command("go", "tool", "-n", "helm")
		cmd.Dir = filepath.Join("..", "tools")
		var out []byte
		out, helmErr = cmd.Output()
		helmPath = strings.TrimSpace(string(out))
		if ee := (*exec.ExitError)(nil); errors.As(helmErr, &ee) {
			helmErr = errors.New(string(ee.Stderr))
		}
	})
	if helmErr != nil {
		t.Fatalf("building helm (hack/tools): %v", helmErr)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(helmPath, args...)
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// render is the chart's objects as helm template prints them for a release
// in admitkit-system, CRDs included, with extra arguments (values).
func render(t *testing.T, values ...string) []*unstructured.Unstructured {
	t.Helper()
	args := append([]string{"template", "admitkit", chart, "--namespace", namespace, "--include-crds"}, values...)
	return documents(t, "helm template", helm(t, args...))
}

// documents decodes every YAML document of data that is not empty.
func documents(t *testing.T, source string, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", source, err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("%s, document %d: %v", source, i, err)
		}
		if len(u.Object) != 0 {
			out = append(out, u)
		}
	}
}

// manifestObjects is every object of hack/manifests.
func manifestObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, documents(t, f, data)...)
	}
	return out
}

func objectKey(u *unstructured.Unstructured) string {
	return u.GetAPIVersion() + " " + u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
}

func byKey(t *testing.T, source string, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for _, u := range objs {
		if out[objectKey(u)] != nil {
			t.Errorf("%s has %s twice", source, objectKey(u))
		}
		out[objectKey(u)] = u
	}
	return out
}

// The chart rendered with its defaults is hack/manifests, object for object
// and field for field, but for the Namespace, which Helm needs before it
// installs (the README applies 00-namespace.yaml first), and the pod
// template's configuration checksum. So neither can change without the
// other.
func TestChartIsTheManifests(t *testing.T) {
	got := byKey(t, "helm template", render(t))
	want := byKey(t, "hack/manifests", manifestObjects(t))
	for key, w := range want {
		if w.GetKind() == "Namespace" {
			continue
		}
		g := got[key]
		if g == nil {
			t.Errorf("the chart lacks %s", key)
			continue
		}
		if g.GetKind() == "Deployment" {
			annotations, _, _ := unstructured.NestedStringMap(g.Object, "spec", "template", "metadata", "annotations")
			if annotations[checksumAnnotation] == "" {
				t.Errorf("%s: spec.template.metadata.annotations lacks %s", key, checksumAnnotation)
			}
			delete(annotations, checksumAnnotation)
			if len(annotations) == 0 {
				unstructured.RemoveNestedField(g.Object, "spec", "template", "metadata", "annotations")
			} else if err := unstructured.SetNestedStringMap(g.Object, annotations, "spec", "template", "metadata", "annotations"); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(g.Object, w.Object) {
			gy, _ := yaml.Marshal(g.Object)
			wy, _ := yaml.Marshal(w.Object)
			t.Errorf("the chart's %s differs from hack/manifests':\n--- chart\n%s\n--- hack/manifests\n%s", key, gy, wy)
		}
	}
	for key := range got {
		if want[key] == nil {
			t.Errorf("the chart has %s, hack/manifests does not", key)
		}
	}
}

// A chart's CRDs are its crds/ directory, which Helm installs first and
// neither upgrades nor deletes: the generated files, byte for byte.
func TestChartCRDsAreGenerated(t *testing.T) {
	_, crds := load(t)
	files, err := filepath.Glob(filepath.Join(chart, "crds", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, f := range files {
		got = append(got, "crd-"+filepath.Base(f))
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m, ok := crds["crd-"+filepath.Base(f)]; ok && !bytes.Equal(data, m) {
			t.Errorf("%s differs from hack/manifests/crd-%s: run hack/update-codegen.sh", f, filepath.Base(f))
		}
	}
	for name := range crds {
		want = append(want, name)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the chart's CRDs %v, want hack/manifests' %v", got, want)
	}
}

// typedInstall decodes rendered objects into what the manifests' tests read.
func typedInstall(t *testing.T, objs []*unstructured.Unstructured) install {
	t.Helper()
	var in install
	for _, u := range objs {
		var target any
		switch u.GetKind() {
		case "Deployment":
			in.deployment = &appsv1.Deployment{}
			target = in.deployment
		case "ConfigMap":
			in.config = &corev1.ConfigMap{}
			target = in.config
		case "MutatingWebhookConfiguration":
			in.mutating = &admissionregistrationv1.MutatingWebhookConfiguration{}
			target = in.mutating
		case "ValidatingWebhookConfiguration":
			in.validating = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			target = in.validating
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, target, true); err != nil {
			t.Fatalf("%s: %v", objectKey(u), err)
		}
	}
	if in.deployment == nil || in.config == nil || in.mutating == nil || in.validating == nil {
		t.Fatal("the chart rendered no Deployment, ConfigMap or webhook configuration")
	}
	return in
}

// A node daemon's account is written once, in nodeScopedServiceAccounts,
// and the chart puts it into both NodeRestriction's configuration, with its
// allowances, and the webhook's matchCondition.
func TestChartNodeScopedServiceAccounts(t *testing.T) {
	in := typedInstall(t, render(t, "--set-json",
		`nodeScopedServiceAccounts=[{"namespace":"node-agents","name":"hardware-labeller","allowedLabelPrefixes":["hardware.example.k8s.io"]},{"namespace":"csi","name":"node-plugin"}]`))
	cfg := in.nodeRestriction(t)
	if len(cfg.NodeScopedServiceAccounts) != 2 || cfg.NodeScopedServiceAccounts[0].Name != "hardware-labeller" ||
		!slices.Equal(cfg.NodeScopedServiceAccounts[0].AllowedLabelPrefixes, []string{"hardware.example.k8s.io"}) {
		t.Errorf("nodeScopedServiceAccounts %+v, want the two accounts given, with their allowances", cfg.NodeScopedServiceAccounts)
	}
	want := "request.userInfo.username in ['system:serviceaccount:node-agents:hardware-labeller', 'system:serviceaccount:csi:node-plugin']"
	for _, w := range in.validating.Webhooks {
		if w.Name == "noderestriction.admission.admitkit.io" {
			if len(w.MatchConditions) != 2 || w.MatchConditions[0].Expression != want {
				t.Errorf("matchConditions %v, want %q first, then the requests it judges", w.MatchConditions, want)
			}
			return
		}
	}
	t.Error("no NodeRestriction webhook")
}

// Each webhook's failure policy and timeout, the plugins served and the
// namespaces left out are values; a plugin not served has no webhook, and
// LocationMutator takes every pod create when PodPreset is not served.
func TestChartValues(t *testing.T) {
	in := typedInstall(t, render(t,
		"--set", "plugins={LocationMutator,NodeRestriction}",
		"--set", "webhooks.locationMutator.failurePolicy=Fail,webhooks.locationMutator.timeoutSeconds=7",
		"--set", "excludedNamespaces={kube-system,monitoring}",
		"--set", "replicas=3,image.repository=registry.example/admitkit,image.tag=v9"))
	if got := in.flag("plugins"); got != "LocationMutator,NodeRestriction" {
		t.Errorf("--plugins=%s, want LocationMutator,NodeRestriction", got)
	}
	if c := in.deployment.Spec.Template.Spec.Containers[0]; c.Image != "registry.example/admitkit:v9" || *in.deployment.Spec.Replicas != 3 {
		t.Errorf("image %s, %d replicas; want registry.example/admitkit:v9, 3", c.Image, *in.deployment.Spec.Replicas)
	}
	if len(in.mutating.Webhooks) != 1 {
		t.Fatalf("mutating webhooks %d, want LocationMutator's alone", len(in.mutating.Webhooks))
	}
	w := in.mutating.Webhooks[0]
	if w.Name != "locationmutator.admission.admitkit.io" || *w.FailurePolicy != admissionregistrationv1.Fail || *w.TimeoutSeconds != 7 || len(w.MatchConditions) != 0 {
		t.Errorf("mutating webhook %s: failurePolicy %s, timeout %d, matchConditions %v; want LocationMutator's, Fail, 7, none",
			w.Name, *w.FailurePolicy, *w.TimeoutSeconds, w.MatchConditions)
	}
	if !excludes(w.NamespaceSelector, "kube-system", "monitoring", namespace, "kube-node-lease") {
		t.Errorf("namespaceSelector %v, want kube-system, monitoring, %s and kube-node-lease left out", w.NamespaceSelector, namespace)
	}
	var names []string
	for _, w := range in.validating.Webhooks {
		names = append(names, w.Name)
	}
	if !slices.Equal(names, []string{"locationmutator.admission.admitkit.io", "noderestriction.admission.admitkit.io"}) {
		t.Errorf("validating webhooks %v, want LocationMutator's and NodeRestriction's", names)
	}
}

// compilePolicies turns the compiled-policies mode on, whatever the
// certificate's source; its RBAC is there either way (TestChartIsTheManifests).
func TestChartCompilePolicies(t *testing.T) {
	for _, values := range [][]string{
		{"--set", "compilePolicies=true"},
		{"--set", "compilePolicies=true,certificates.source=certManager"},
	} {
		in := typedInstall(t, render(t, values...))
		if !slices.Contains(in.deployment.Spec.Template.Spec.Containers[0].Args, "--compile-policies") {
			t.Errorf("%v: args %v lack --compile-policies", values, in.deployment.Spec.Template.Spec.Containers[0].Args)
		}
	}
	if in := typedInstall(t, render(t)); slices.Contains(in.deployment.Spec.Template.Spec.Containers[0].Args, "--compile-policies") {
		t.Error("the mode is on by default")
	}
}

// With cert-manager, the server reads the Certificate's Secret and
// cert-manager's CA injector writes caBundle; with a given Secret, the
// server writes its ca.crt. Only the self-managed certificate needs the
// Role's grants on Secrets.
func TestChartCertificates(t *testing.T) {
	for _, tc := range []struct {
		source string
		kinds  []string // what the source adds or leaves out
		args   []string
	}{
		{"certManager", []string{"Certificate", "Issuer"}, []string{"--tls-cert-file=/etc/admitkit-tls/tls.crt", "--tls-private-key-file=/etc/admitkit-tls/tls.key"}},
		{"secret", nil, []string{"--tls-cert-file=/etc/admitkit-tls/tls.crt", "--tls-private-key-file=/etc/admitkit-tls/tls.key", "--tls-ca-file=/etc/admitkit-tls/ca.crt",
			"--mutating-webhook-configuration=admitkit-mutating", "--validating-webhook-configuration=admitkit-validating"}},
	} {
		t.Run(tc.source, func(t *testing.T) {
			objs := render(t, "--set", "certificates.source="+tc.source+",certificates.secretName=given-tls")
			var kinds []string
			for _, u := range objs {
				if slices.Contains([]string{"Certificate", "Issuer"}, u.GetKind()) {
					kinds = append(kinds, u.GetKind())
				}
				if u.GetKind() == "Role" {
					role := &rbacv1.Role{}
					if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, role, true); err != nil {
						t.Fatalf("%s: %v", objectKey(u), err)
					}
					for _, r := range role.Rules {
						if slices.Contains(r.Resources, "secrets") {
							t.Errorf("Role %s grants %v on secrets: the server writes no Secret", role.Name, r.Verbs)
						}
					}
				}
			}
			slices.Sort(kinds)
			if !slices.Equal(kinds, tc.kinds) {
				t.Errorf("rendered %v, want %v", kinds, tc.kinds)
			}
			in := typedInstall(t, objs)
			spec := in.deployment.Spec.Template.Spec
			var args []string
			for _, a := range spec.Containers[0].Args {
				if strings.HasPrefix(a, "--tls-") || strings.HasPrefix(a, "--cert-") || strings.HasSuffix(strings.SplitN(a, "=", 2)[0], "-webhook-configuration") {
					args = append(args, a)
				}
			}
			if !slices.Equal(args, tc.args) {
				t.Errorf("certificate flags %v, want %v", args, tc.args)
			}
			if i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil }); i < 0 || spec.Volumes[i].Secret.SecretName != "given-tls" {
				t.Errorf("volumes %v, want the Secret given-tls", spec.Volumes)
			}
			inject := in.mutating.Annotations["cert-manager.io/inject-ca-from"]
			if want := map[bool]string{true: namespace + "/admitkit-webhook"}[tc.source == "certManager"]; inject != want || in.validating.Annotations["cert-manager.io/inject-ca-from"] != want {
				t.Errorf("cert-manager.io/inject-ca-from %q, want %q on both configurations", inject, want)
			}
		})
	}
}
