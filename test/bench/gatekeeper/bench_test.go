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

// Package gatekeeper compares the LocationMutator's CPU cost per request
// with Gatekeeper's mutating webhook on the same pod and mutators. It is a
// module of its own so that Gatekeeper's dependencies stay out of admitkit
// and test/.
package gatekeeper

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	gkunversioned "github.com/open-policy-agent/gatekeeper/v3/apis/mutations/unversioned"
	gkmutation "github.com/open-policy-agent/gatekeeper/v3/pkg/mutation"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/mutation/mutators/assign"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/mutation/mutators/assignimage"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/mutation/mutators/assignmeta"
	"github.com/open-policy-agent/gatekeeper/v3/pkg/mutation/mutators/modifyset"
	gktypes "github.com/open-policy-agent/gatekeeper/v3/pkg/mutation/types"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	cradmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	"sigs.k8s.io/yaml"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

var (
	podGVK = corev1.SchemeGroupVersion.WithKind("Pod")
	podGVR = corev1.SchemeGroupVersion.WithResource("pods")
)

// The mutators BenchmarkAdmitTenMatching runs, read from its own file.
const tenMutatorsFile = "../../../plugin/pkg/admission/locationmutator/testdata/ten-pod-mutators.yaml"

// threeContainerPod is the pod locationmutator's benchmarks admit (its
// threeContainerPod lives in a _test file there, so it cannot be imported).
func threeContainerPod() *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "prod", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "app", Image: "nginx:1.27", Args: []string{"--alsologtostderr", "-v=2"}},
			{Name: "proxy", Image: "envoyproxy/envoy:v1", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}},
			{Name: "log", Image: "docker.io/fluent/fluent-bit:3", ImagePullPolicy: corev1.PullIfNotPresent},
		}},
	}
}

// The fixtures locationmutator's benchmarks run, read from the files they
// read, so that both sides benchmark the same mutators.
const (
	pullAlwaysFile     = "../../../plugin/pkg/admission/locationmutator/testdata/pull-always.yaml"
	deploymentOnlyFile = "../../../plugin/pkg/admission/locationmutator/testdata/deployment-only-assign.yaml.fmt"
)

func pullAlways(tb testing.TB) []string { return []string{readFixture(tb, pullAlwaysFile)} }

// deploymentOnly are n Assigns for Deployments: a pod matches none.
func deploymentOnly(tb testing.TB, n int) []string {
	format := readFixture(tb, deploymentOnlyFile)
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return out
}

// readFixture returns a fixture file without its final newline.
func readFixture(tb testing.TB, name string) string {
	tb.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		tb.Fatal(err)
	}
	return strings.TrimSuffix(string(data), "\n")
}

func tenMutators(tb testing.TB) []string {
	data, err := os.ReadFile(tenMutatorsFile)
	if err != nil {
		tb.Fatal(err)
	}
	return strings.Split(string(data), "\n---\n")
}

// shape is one benchmark case: a set of mutators.
type shape struct {
	name     string
	mutators func(testing.TB) []string
	mutates  bool // whether the fresh pod changes
}

var shapes = []shape{
	{"ten-matching", tenMutators, true},
	{"one-assign", pullAlways, true},
	{"non-matching-100", func(tb testing.TB) []string { return deploymentOnly(tb, 100) }, false},
}

// gatekeeperSystem builds Gatekeeper's mutation system from the manifests.
func gatekeeperSystem(tb testing.TB, manifests []string) *gkmutation.System {
	tb.Helper()
	sys := gkmutation.NewSystem(gkmutation.SystemOpts{})
	for _, m := range manifests {
		if err := sys.Upsert(gatekeeperMutator(tb, m)); err != nil {
			tb.Fatal(err)
		}
	}
	return sys
}

// gatekeeperMutator builds a Gatekeeper mutator from a manifest, through
// the constructors its controllers use.
func gatekeeperMutator(tb testing.TB, manifest string) gktypes.Mutator {
	tb.Helper()
	data, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		tb.Fatal(err)
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(data, &tm); err != nil {
		tb.Fatal(err)
	}
	var mut gktypes.Mutator
	switch tm.Kind {
	case "Assign":
		var a gkunversioned.Assign
		if err = json.Unmarshal(data, &a); err == nil {
			mut, err = assign.MutatorForAssign(&a)
		}
	case "AssignMetadata":
		var a gkunversioned.AssignMetadata
		if err = json.Unmarshal(data, &a); err == nil {
			mut, err = assignmeta.MutatorForAssignMetadata(&a)
		}
	case "ModifySet":
		var a gkunversioned.ModifySet
		if err = json.Unmarshal(data, &a); err == nil {
			mut, err = modifyset.MutatorForModifySet(&a)
		}
	case "AssignImage":
		var a gkunversioned.AssignImage
		if err = json.Unmarshal(data, &a); err == nil {
			mut, err = assignimage.MutatorForAssignImage(&a)
		}
	default:
		tb.Fatalf("kind %q", tm.Kind)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return mut
}

// gatekeeperWebhook is what Gatekeeper's mutation webhook does with the
// object of an AdmissionReview (pkg/webhook/mutation.go, mutateRequest):
// decode it to unstructured, set the request's namespace, run the system,
// encode, and diff the two JSON documents into a JSONPatch. Left out: the
// AdmissionReview envelope and the HTTP and TLS around it, and the
// Namespace GET from its informer cache (handed in here). It returns the
// response and the mutated object's JSON (nil when nothing changed).
func gatekeeperWebhook(sys *gkmutation.System, raw []byte, ns *corev1.Namespace, op admissionv1.Operation) (cradmission.Response, []byte, error) {
	obj := unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(raw); err != nil {
		return cradmission.Response{}, nil, err
	}
	oldNS := obj.GetNamespace()
	obj.SetNamespace(ns.Name)
	mutable := &gktypes.Mutable{
		Object:    &obj,
		Namespace: ns,
		Username:  "alice",
		Source:    gktypes.SourceTypeOriginal,
		Operation: op,
	}
	mutated, err := sys.Mutate(context.Background(), mutable)
	if err != nil || !mutated {
		return cradmission.Allowed("Resource was not mutated"), nil, err
	}
	obj.SetNamespace(oldNS)
	newJSON, err := obj.MarshalJSON()
	if err != nil {
		return cradmission.Response{}, nil, err
	}
	return cradmission.PatchResponseFromRaw(raw, newJSON), newJSON, nil
}

func ourPlugin(tb testing.TB, manifests []string) *locationmutator.Plugin {
	tb.Helper()
	ms := make([]*mutation.Mutator, len(manifests))
	for i, m := range manifests {
		var err error
		if ms[i], err = mutation.Decode([]byte(m)); err != nil {
			tb.Fatal(err)
		}
	}
	s, err := mutation.NewSystem(ms)
	if err != nil {
		tb.Fatal(err)
	}
	return locationmutator.NewPlugin(s)
}

func attrs(pod *corev1.Pod, op admission.Operation) admission.Attributes {
	var opts runtime.Object = &metav1.CreateOptions{}
	if op == admission.Update {
		opts = &metav1.UpdateOptions{}
	}
	return admission.NewAttributesRecord(pod, nil, podGVK, "prod", "web", podGVR, "", op, opts, false, &user.DefaultInfo{Name: "alice"})
}

func objectInterfaces(tb testing.TB) admission.ObjectInterfaces {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		tb.Fatal(err)
	}
	return admission.NewObjectInterfacesFromScheme(s)
}

var prod = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "prod"}}

// run admits a fresh pod through both and returns what each made of it.
func run(tb testing.TB, sh shape) (ours, theirs *corev1.Pod, oursPlugin *locationmutator.Plugin, sys *gkmutation.System) {
	tb.Helper()
	manifests := sh.mutators(tb)
	oursPlugin = ourPlugin(tb, manifests)
	sys = gatekeeperSystem(tb, manifests)
	ours = threeContainerPod()
	if err := oursPlugin.Admit(context.Background(), attrs(ours, admission.Create), objectInterfaces(tb)); err != nil {
		tb.Fatal(err)
	}
	raw, err := json.Marshal(threeContainerPod())
	if err != nil {
		tb.Fatal(err)
	}
	_, out, err := gatekeeperWebhook(sys, raw, prod, admissionv1.Create)
	if err != nil {
		tb.Fatal(err)
	}
	if out == nil {
		out = raw
	}
	theirs = &corev1.Pod{}
	if err := json.Unmarshal(out, theirs); err != nil {
		tb.Fatal(err)
	}
	return ours, theirs, oursPlugin, sys
}

// Both sides must make the same pod, or the comparison means nothing.
func TestSameResult(t *testing.T) {
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			ours, theirs, _, _ := run(t, sh)
			if changed := !equality.Semantic.DeepEqual(ours, threeContainerPod()); changed != sh.mutates {
				t.Fatalf("pod changed: %v, want %v", changed, sh.mutates)
			}
			if !equality.Semantic.DeepEqual(ours, theirs) {
				a, _ := json.Marshal(ours)
				b, _ := json.Marshal(theirs)
				t.Errorf("different results:\nadmitkit:   %s\ngatekeeper: %s", a, b)
			}
		})
	}
}

// copied keeps the copy benchmarks' copies, so that the compiler cannot
// leave the copying out.
var copied any

// BenchmarkSideBySide runs each shape through Gatekeeper's webhook path
// and through the LocationMutator's Admit on a typed pod. "fresh" is a pod
// the mutators change (a CREATE); "mutated" one they already changed (an
// UPDATE that changes nothing). admitkit's fresh case includes a deep copy
// of the pod per request when the mutators change it, since Admit changes
// it in place; "copy" is that copy alone, in the same run, so that what
// Admit itself costs is the difference (in kube-apiserver the object is
// decoded for the request whether or not a plugin runs).
func BenchmarkSideBySide(b *testing.B) {
	o := objectInterfaces(b)
	for _, sh := range shapes {
		ours, theirs, plugin, sys := run(b, sh)
		freshRaw, err := json.Marshal(threeContainerPod())
		if err != nil {
			b.Fatal(err)
		}
		mutatedRaw, err := json.Marshal(theirs)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(sh.name+"/fresh/gatekeeper", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := gatekeeperWebhook(sys, freshRaw, prod, admissionv1.Create); err != nil {
					b.Fatal(err)
				}
			}
		})
		fresh := threeContainerPod()
		if sh.mutates {
			b.Run(sh.name+"/fresh/copy", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					copied = fresh.DeepCopy()
				}
			})
		}
		b.Run(sh.name+"/fresh/admitkit", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				pod := fresh
				if sh.mutates {
					pod = fresh.DeepCopy()
				}
				if err := plugin.Admit(context.Background(), attrs(pod, admission.Create), o); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(sh.name+"/mutated/gatekeeper", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := gatekeeperWebhook(sys, mutatedRaw, prod, admissionv1.Update); err != nil {
					b.Fatal(err)
				}
			}
		})
		a := attrs(ours, admission.Update)
		b.Run(sh.name+"/mutated/admitkit", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := plugin.Admit(context.Background(), a, o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
