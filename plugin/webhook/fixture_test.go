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

package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/warning"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	settingsfake "github.com/admitkit/admitkit/generated/clientset/versioned/fake"
	settingsinformers "github.com/admitkit/admitkit/generated/informers/externalversions"
	"github.com/admitkit/admitkit/plugin"
	"github.com/admitkit/admitkit/plugin/initializer"
	"github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction"
	"github.com/admitkit/admitkit/plugin/webhook"
)

// admissionConfig configures LocationMutator with two pod mutators and
// NodeRestriction with one node-scoped service account.
const admissionConfig = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: LocationMutator
  configuration:
    apiVersion: locationmutator.admission.admitkit.io/v1alpha1
    kind: Configuration
    mutators:
    - apiVersion: mutations.gatekeeper.sh/v1
      kind: AssignMetadata
      metadata: {name: owner}
      spec:
        match: {kinds: [{apiGroups: [""], kinds: [Pod]}]}
        location: metadata.labels.owner
        parameters: {assign: {value: platform}}
    - apiVersion: mutations.gatekeeper.sh/v1
      kind: Assign
      metadata: {name: always-pull}
      spec:
        applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
        location: "spec.containers[name:*].imagePullPolicy"
        parameters: {assign: {value: Always}}
- name: NodeRestriction
  configuration:
    apiVersion: noderestriction.admission.admitkit.io/v1alpha1
    kind: Configuration
    nodeScopedServiceAccounts:
    - {namespace: kube-system, name: cni}
`

// Test plugins that refuse the way a plugin may: with an APIStatus that
// has field causes, and with a plain error; and one that records the
// attributes it is given.
const (
	invalidPlugin   = "TestInvalid"
	plainPlugin     = "TestPlainError"
	recordingPlugin = "TestRecording"
	labelingPlugin  = "TestLabeling"
)

type refusingPlugin struct {
	*admission.Handler
	err error
}

func (p refusingPlugin) Validate(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	return p.err
}

// recorder is the last attributes the recording plugin validated.
type recorder struct {
	mu    sync.Mutex
	attrs admission.Attributes
}

func (r *recorder) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attrs = a
	return nil
}

func (r *recorder) Handles(admission.Operation) bool { return true }

func (r *recorder) last() admission.Attributes {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attrs
}

// labeler is a mutating plugin that labels pods labeled=yes, warns and
// annotates its audit event saying which labels it saw, and refuses a pod
// labeled refuse=yes, after all of that: what a chain's later plugin does
// to what an earlier one left.
type labeler struct{ *admission.Handler }

func (labeler) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return nil
	}
	seen := labels.FormatLabels(pod.Labels)
	warning.AddWarning(ctx, "", "the labeler saw "+seen)
	if err := a.AddAnnotation("labeler.admitkit.io/saw", seen); err != nil {
		return err
	}
	if pod.Labels["refuse"] == "yes" {
		return admission.NewForbidden(a, errors.New("the labeler refuses pods labeled refuse=yes"))
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels["labeled"] = "yes"
	return nil
}

func registerTestPlugins(plugins *admission.Plugins, rec *recorder) {
	plugins.Register(labelingPlugin, func(io.Reader) (admission.Interface, error) {
		return labeler{admission.NewHandler(admission.Create)}, nil
	})
	plugins.Register(recordingPlugin, func(io.Reader) (admission.Interface, error) { return rec, nil })
	invalid := apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), "web", field.ErrorList{
		field.Required(field.NewPath("spec", "containers").Index(0).Child("image"), "an image is required"),
		field.Invalid(field.NewPath("metadata", "labels").Key("app"), "x/y", "not a label value"),
	})
	plugins.Register(invalidPlugin, func(io.Reader) (admission.Interface, error) {
		return refusingPlugin{admission.NewHandler(admission.Create), invalid}, nil
	})
	plugins.Register(plainPlugin, func(io.Reader) (admission.Interface, error) {
		return refusingPlugin{admission.NewHandler(admission.Create), errors.New("something broke")}, nil
	})
}

type fixture struct {
	host *webhook.Host
	kube *kubefake.Clientset
	// The registry and initializers the host was built with, for building
	// the same plugins in-process.
	plugins      *admission.Plugins
	initializers []admission.PluginInitializer
	scheme       *runtime.Scheme
	// recorded has what the recording plugin was last given.
	recorded *recorder
}

// newFixture starts a host of the three plugins and the test plugins over
// fake clients holding objects and presets, and waits until it is ready.
func newFixture(t testing.TB, objects []runtime.Object, presets ...runtime.Object) *fixture {
	t.Helper()
	return newFixtureWithConfig(t, admissionConfig, objects, presets...)
}

// newFixtureWithConfig is newFixture with another AdmissionConfiguration.
func newFixtureWithConfig(t testing.TB, admissionConfig string, objects []runtime.Object, presets ...runtime.Object) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stop := ctx.Done()

	kube := kubefake.NewClientset(objects...)
	settings := settingsfake.NewClientset(presets...)
	scheme := webhook.NewScheme()
	kubeInformers := informers.NewSharedInformerFactory(kube, 0)
	settingsInformers := settingsinformers.NewSharedInformerFactory(settings, 0)
	gates := featuregate.NewFeatureGate()
	if err := noderestriction.AddFeatureGates(gates); err != nil {
		t.Fatal(err)
	}
	configFile := filepath.Join(t.TempDir(), "admission.yaml")
	if err := os.WriteFile(configFile, []byte(admissionConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	plugins := admission.NewPlugins()
	plugin.RegisterAllAdmissionPlugins(plugins)
	rec := &recorder{}
	registerTestPlugins(plugins, rec)
	initializers := []admission.PluginInitializer{
		genericadmissioninitializer.New(kube, dynamicfake.NewSimpleDynamicClient(scheme), kubeInformers,
			authorizerfactory.NewAlwaysAllowAuthorizer(), gates, compatibility.NewEffectiveVersionFromString("1.37", "", ""), stop, nil),
		initializer.New(settingsInformers),
		initializer.NewServerIdentity("test"),
	}
	host, err := webhook.New(webhook.Options{
		Plugins:      plugins,
		Enabled:      []string{"PodPreset", "NodeRestriction", "LocationMutator", invalidPlugin, plainPlugin, recordingPlugin, labelingPlugin},
		ConfigFile:   configFile,
		Initializers: initializers,
		Informers:    []webhook.InformerFactory{kubeInformers, settingsInformers},
		Scheme:       scheme,
	})
	if err != nil {
		t.Fatalf("webhook.New: %v", err)
	}
	host.Start(stop)
	deadline := time.Now().Add(30 * time.Second)
	for host.Ready() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("host not ready: %v", host.Ready())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return &fixture{host: host, kube: kube, plugins: plugins, initializers: initializers, scheme: scheme, recorded: rec}
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func webPod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", GenerateName: "web-", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}},
	}
}

// envPreset selects app=web pods and sets env name=value in them.
func envPreset(presetName, envName, value string) *settingsv1alpha1.PodPreset {
	return &settingsv1alpha1.PodPreset{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: presetName, ResourceVersion: "1"},
		Spec: settingsv1alpha1.PodPresetSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Env:      []corev1.EnvVar{{Name: envName, Value: value}},
		},
	}
}

func raw(t testing.TB, obj runtime.Object) runtime.RawExtension {
	t.Helper()
	if obj == nil {
		return runtime.RawExtension{}
	}
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: data}
}

var (
	podsResource  = metav1.GroupVersionResource{Version: "v1", Resource: "pods"}
	podKind       = metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}
	nodesResource = metav1.GroupVersionResource{Version: "v1", Resource: "nodes"}
	nodeKind      = metav1.GroupVersionKind{Version: "v1", Kind: "Node"}
)

// podCreate is a pod create request as kube-apiserver sends it.
func podCreate(t testing.TB, uid types.UID, pod *corev1.Pod) *admissionv1.AdmissionRequest {
	return &admissionv1.AdmissionRequest{
		UID: uid, Kind: podKind, Resource: podsResource, RequestKind: &podKind, RequestResource: &podsResource,
		Namespace: pod.Namespace, Name: pod.Name, Operation: admissionv1.Create,
		Object:  raw(t, pod),
		Options: raw(t, &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "CreateOptions"}}),
		DryRun:  new(bool),
	}
}
