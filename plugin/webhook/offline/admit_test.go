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
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/component-base/featuregate"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin"
	"github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction"
	settingsadmission "github.com/admitkit/admitkit/registry/settings/admission"
)

func testOptions(t testing.TB, in Inputs) Options {
	t.Helper()
	registry := admission.NewPlugins()
	plugin.RegisterAllAdmissionPlugins(registry)
	settingsadmission.Register(registry, nil)
	gate := featuregate.NewFeatureGate()
	if err := noderestriction.AddFeatureGates(gate); err != nil {
		t.Fatal(err)
	}
	return Options{Inputs: in, Plugins: registry, FeatureGates: gate, EffectiveVersion: utilcompatibility.DefaultBuildEffectiveVersion()}
}

func preset(name string, env ...string) *settingsv1alpha1.PodPreset {
	p := &settingsv1alpha1.PodPreset{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"}}
	p.Spec.Selector = metav1.LabelSelector{MatchLabels: map[string]string{"role": "frontend"}}
	for i := 0; i+1 < len(env); i += 2 {
		p.Spec.Env = append(p.Spec.Env, corev1.EnvVar{Name: env[i], Value: env[i+1]})
	}
	return p
}

func assign(name, location string, value any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "mutations.gatekeeper.sh/v1", "kind": "Assign",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"applyTo":    []any{map[string]any{"groups": []any{""}, "kinds": []any{"Pod"}, "versions": []any{"v1"}}},
			"match":      map[string]any{"scope": "Namespaced", "kinds": []any{map[string]any{"apiGroups": []any{"*"}, "kinds": []any{"Pod"}}}},
			"location":   location,
			"parameters": map[string]any{"assign": map[string]any{"value": value}},
		},
	}}
}

func pod(name string, env ...string) *unstructured.Unstructured {
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"role": "frontend"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
	}
	for i := 0; i+1 < len(env); i += 2 {
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: env[i], Value: env[i+1]})
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: u}
}

func newAdmitter(t testing.TB, in Inputs) *Admitter {
	t.Helper()
	a, err := New(context.Background(), testOptions(t, in))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func TestAdmitAppliesPresetsAndMutators(t *testing.T) {
	a := newAdmitter(t, Inputs{
		Presets:  []*settingsv1alpha1.PodPreset{preset("db", "DB_PORT", "6379")},
		Mutators: []*unstructured.Unstructured{assign("always-pull", "spec.containers[name:*].imagePullPolicy", "Always")},
	})
	for _, tc := range []struct {
		name, wantEnv, wantWarning string
		pod                        *unstructured.Unstructured
	}{
		{name: "preset applies", pod: pod("website"), wantEnv: "DB_PORT=6379"},
		{name: "conflict: no preset, a warning", pod: pod("conflict", "DB_PORT", "5432"), wantEnv: "DB_PORT=5432", wantWarning: "db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := a.Admit(context.Background(), tc.pod, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Refusal != nil {
				t.Fatalf("refused: %s", r.Refusal.Message)
			}
			c, _, _ := unstructured.NestedSlice(r.Object.Object, "spec", "containers")
			container := c[0].(map[string]any)
			if got := container["imagePullPolicy"]; got != "Always" {
				t.Errorf("imagePullPolicy = %v, want Always", got)
			}
			env, _, _ := unstructured.NestedSlice(container, "env")
			var got []string
			for _, e := range env {
				got = append(got, fmt.Sprintf("%v=%v", e.(map[string]any)["name"], e.(map[string]any)["value"]))
			}
			if strings.Join(got, ",") != tc.wantEnv {
				t.Errorf("env = %v, want %s", got, tc.wantEnv)
			}
			if w := strings.Join(r.Warnings, "\n"); (tc.wantWarning == "") != (w == "") || !strings.Contains(w, tc.wantWarning) {
				t.Errorf("warnings = %q, want one naming %q", r.Warnings, tc.wantWarning)
			}
		})
	}
}

func TestNewRefusesBadInputs(t *testing.T) {
	badPreset := preset("bad", "DB_PORT", "1")
	badPreset.Spec.Env[0].Name = ""
	for _, tc := range []struct {
		name, want string
		in         Inputs
	}{
		{name: "preset", in: Inputs{Presets: []*settingsv1alpha1.PodPreset{badPreset}}, want: "PodPreset shop/bad"},
		{name: "mutator location", in: Inputs{Mutators: []*unstructured.Unstructured{assign("broken", "spec.containers[name:*.image", "x")}}, want: "spec.location"},
		{name: "conflicting mutators", in: Inputs{Mutators: []*unstructured.Unstructured{
			assign("a", "spec.containers[name:*].imagePullPolicy", "Always"),
			assign("b", "spec.containers.imagePullPolicy", "Always"),
		}}, want: "conflicts with"},
		{name: "configuration", in: Inputs{LocationMutatorConfig: []byte("kind: Nope")}, want: "LocationMutator configuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := New(context.Background(), testOptions(t, tc.in))
			if err == nil {
				a.Close()
				t.Fatal("no error")
			}
			var inputErr *InputError
			if !errors.As(err, &inputErr) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q (%T), want an InputError naming %q", err, err, tc.want)
			}
		})
	}
}

func TestAdmitNeedsTheNamespacesSelectorsRead(t *testing.T) {
	cp := &settingsv1alpha1.ClusterPodPreset{ObjectMeta: metav1.ObjectMeta{Name: "proxy"}}
	cp.Spec.NamespaceSelector = metav1.LabelSelector{MatchLabels: map[string]string{"proxy": "on"}}
	cp.Spec.Env = []corev1.EnvVar{{Name: "HTTP_PROXY", Value: "http://proxy"}}
	a := newAdmitter(t, Inputs{ClusterPresets: []*settingsv1alpha1.ClusterPodPreset{cp}})
	_, err := a.Admit(context.Background(), pod("website"), nil)
	if err == nil || !strings.Contains(err.Error(), `namespace "shop"`) {
		t.Fatalf("error %v, want one naming namespace shop", err)
	}
}
