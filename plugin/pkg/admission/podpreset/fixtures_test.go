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

package podpreset

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	admissiontesting "k8s.io/apiserver/pkg/admission/testing"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes/fake"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

const testNamespace = "namespace"

// newTestPlugin builds a plugin whose caches hold exactly objs (PodPresets,
// ClusterPodPresets and Namespaces), already synced, with a recorder the
// test can read.
func newTestPlugin(t testing.TB, objs ...runtime.Object) (*Plugin, *record.FakeRecorder) {
	t.Helper()
	namespaces := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	p := NewPlugin()
	for _, obj := range objs {
		switch obj.(type) {
		case *settingsv1alpha1.PodPreset, *settingsv1alpha1.ClusterPodPreset:
			p.index.upsert(obj)
		case *corev1.Namespace:
			if err := namespaces.Add(obj); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("unexpected fixture %T", obj)
		}
	}
	recorder := record.NewFakeRecorder(10)
	p.namespaces = corev1listers.NewNamespaceLister(namespaces)
	p.client = fake.NewClientset()
	p.recorder = recorder
	return p, recorder
}

type admitOptions struct {
	namespace string
	dryRun    bool
	ctx       context.Context
	o         admission.ObjectInterfaces
	// audit, when set, receives the audit annotations the plugin adds.
	audit map[string]string
}

// auditRecorder keeps the audit annotations a plugin adds, and fails the
// test when a key is given two values: kube-apiserver refuses the second.
type auditRecorder struct {
	admission.Attributes
	t           *testing.T
	annotations map[string]string
}

func (r auditRecorder) AddAnnotation(key, value string) error {
	if old, ok := r.annotations[key]; ok && old != value {
		r.t.Errorf("audit annotation %s set to %q, then to %q", key, old, value)
	}
	r.annotations[key] = value
	return nil
}

// admitPod creates pod in the test namespace through the reinvocation
// tester, which admits it twice and fails the test unless the second pass
// leaves the first one's result alone.
func admitPod(t *testing.T, p *Plugin, pod runtime.Object, opts ...func(*admitOptions)) error {
	t.Helper()
	o := admitOptions{namespace: testNamespace, ctx: context.Background()}
	for _, opt := range opts {
		opt(&o)
	}
	var attrs admission.Attributes = admission.NewAttributesRecord(pod, nil, corev1.SchemeGroupVersion.WithKind("Pod"), o.namespace, "",
		corev1.SchemeGroupVersion.WithResource("pods"), "", admission.Create, &metav1.CreateOptions{}, o.dryRun, &user.DefaultInfo{})
	if o.audit != nil {
		attrs = auditRecorder{Attributes: attrs, t: t, annotations: o.audit}
	}
	return admissiontesting.WithReinvocationTesting(t, p).Admit(o.ctx, attrs, o.o)
}

func inNamespace(ns string) func(*admitOptions) { return func(o *admitOptions) { o.namespace = ns } }
func dryRun(o *admitOptions)                    { o.dryRun = true }

func podPreset(name string, selector metav1.LabelSelector, spec settingsv1alpha1.PodPresetSpec) *settingsv1alpha1.PodPreset {
	spec.Selector = selector
	return &settingsv1alpha1.PodPreset{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace, ResourceVersion: "10" + name},
		Spec:       spec,
	}
}

func clusterPodPreset(name string, namespaceSelector, selector metav1.LabelSelector, spec settingsv1alpha1.PodPresetSpec) *settingsv1alpha1.ClusterPodPreset {
	spec.Selector = selector
	return &settingsv1alpha1.ClusterPodPreset{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "20" + name},
		Spec:       settingsv1alpha1.ClusterPodPresetSpec{NamespaceSelector: namespaceSelector, PodPresetSpec: spec},
	}
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

var (
	everything = metav1.LabelSelector{}
	securityS2 = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "security", Operator: metav1.LabelSelectorOpIn, Values: []string{"S2"}},
	}}
	securityS3 = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "security", Operator: metav1.LabelSelectorOpIn, Values: []string{"S3"}},
	}}
)

// testPod is a pod labelled security=S2 with one container and one init
// container, each with env abc=value2 and ABC=value3.
func testPod() *corev1.Pod {
	env := []corev1.EnvVar{{Name: "abc", Value: "value2"}, {Name: "ABC", Value: "value3"}}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "mypod", Namespace: testNamespace, Labels: map[string]string{"security": "S2"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox", Env: append([]corev1.EnvVar(nil), env...)}},
			Containers:     []corev1.Container{{Name: "app", Image: "nginx", Env: append([]corev1.EnvVar(nil), env...)}},
		},
	}
}

func configMapEnv(name, prefix string) corev1.EnvFromSource {
	return corev1.EnvFromSource{Prefix: prefix, ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}
}

func emptyDir(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}
