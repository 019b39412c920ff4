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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
	"github.com/admitkit/admitkit/plugin/webhook/policysync"
	"github.com/admitkit/admitkit/test/integration/framework"
)

// compiledLiveMutators are two Gatekeeper mutators of pods in the
// namespace mutated.
var compiledLiveMutators = []string{`apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata: {name: team-label}
spec:
  match: {scope: Namespaced, namespaces: [mutated], kinds: [{apiGroups: [""], kinds: [Pod]}]}
  location: metadata.labels.team
  parameters: {assign: {value: blue}}`, `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: pull-always}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  match: {scope: Namespaced, namespaces: [mutated]}
  location: "spec.containers[name:*].imagePullPolicy"
  parameters: {assign: {value: Always}}`}

// TestCompiledLiveMutators: with --compile-policies, each Gatekeeper
// mutator from the API reaches a pod exactly once, by the policy when it
// compiled and by the webhook's LocationMutator when it did not, whichever
// the compiler decides for each; each says which; and their delete takes
// them off both.
func TestCompiledLiveMutators(t *testing.T) {
	cfg := serverConfig()
	cfg.AdmissionConfig, cfg.Files, cfg.Args = "", nil, nil
	srv, err := framework.StartStock(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Cleanup() })
	wcfg := webhookConfig("compiled-live-mutators")
	wcfg.Args = []string{"--compile-policies", "--compiled-handover-delay=2s"}
	w, err := framework.StartWebhookHost(srv, wcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Kill)
	kube, err := kubernetes.NewForConfig(srv.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(srv.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mutated"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().ServiceAccounts("mutated").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resources := map[string]dynamic.ResourceInterface{}
	for _, k := range mutation.Kinds {
		resources[k.Name] = dyn.Resource(k.GVR())
	}
	var objs []*unstructured.Unstructured
	for _, doc := range compiledLiveMutators {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatal(err)
		}
		if _, err := resources[u.GetKind()].Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s %s: %v", u.GetKind(), u.GetName(), err)
		}
		objs = append(objs, u)
	}

	// Each mutator says whether it compiled.
	compiled := 0
	for _, u := range objs {
		var got *unstructured.Unstructured
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err = resources[u.GetKind()].Get(ctx, u.GetName(), metav1.GetOptions{})
			return err == nil && got.GetAnnotations()[policysync.CompiledAnnotation] != "", err
		})
		if err != nil {
			t.Fatalf("%s %s never said whether it compiled: %v", u.GetKind(), u.GetName(), err)
		}
		a := got.GetAnnotations()
		switch a[policysync.CompiledAnnotation] {
		case "true":
			compiled++
		case "false":
			if a[policysync.NotCompiledAnnotation] == "" {
				t.Errorf("%s %s did not compile and says not why", u.GetKind(), u.GetName())
			}
		default:
			t.Errorf("%s %s: %s=%q", u.GetKind(), u.GetName(), policysync.CompiledAnnotation, a[policysync.CompiledAnnotation])
		}
		t.Logf("%s %s: compiled %s %s", u.GetKind(), u.GetName(), a[policysync.CompiledAnnotation], a[policysync.NotCompiledAnnotation])
	}

	// The webhook leaves the compiled ones to the policies: its
	// LocationMutator enforces the others alone.
	settle := func(carried, enforced float64) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return webhookSample(t, w, "admitkit_policysync_carried_sources") == carried &&
				webhookSample(t, w, `apiserver_admission_locationmutator_mutators{source="api",state="enforced"}`) == enforced, nil
		})
		if err != nil {
			t.Fatalf("the webhook does not leave %v mutator(s) to the policies and enforce %v: %v", carried, enforced, err)
		}
	}
	settle(float64(compiled), float64(len(objs)-compiled))

	createPod := func() *corev1.Pod {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Namespace: "mutated"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/web:1", ImagePullPolicy: corev1.PullIfNotPresent}}}}
		got, err := kube.CoreV1().Pods("mutated").Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatalf("creating a pod: %v", err)
		}
		return got
	}
	mutated := func() float64 {
		return webhookSample(t, w, "apiserver_admission_locationmutator_objects_mutated_total")
	}
	before := mutated()
	pod := createPod()
	if pod.Labels["team"] != "blue" || pod.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways {
		t.Errorf("the pod has labels %v and imagePullPolicy %s, want team=blue and Always", pod.Labels, pod.Spec.Containers[0].ImagePullPolicy)
	}
	want := 1.0
	if compiled == len(objs) {
		want = 0
	}
	if got := mutated() - before; got != want {
		t.Errorf("the webhook's LocationMutator changed %v pod(s), want %v (%d of %d mutators compiled)", got, want, compiled, len(objs))
	}

	// Their delete takes them off both, and the policies go.
	for _, u := range objs {
		if err := resources[u.GetKind()].Delete(ctx, u.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	settle(0, 0)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		maps, err := kube.AdmissionregistrationV1().MutatingAdmissionPolicies().List(ctx, metav1.ListOptions{LabelSelector: policysync.SetLabel})
		return err == nil && len(maps.Items) == 0, err
	})
	if err != nil {
		t.Fatalf("the compiled policies stay after their mutators' delete: %v", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		pod = createPod()
		return pod.Labels["team"] == "" && pod.Spec.Containers[0].ImagePullPolicy == corev1.PullIfNotPresent, nil
	})
	if err != nil {
		t.Errorf("after the delete, the pod has labels %v and imagePullPolicy %s, want neither mutator's", pod.Labels, pod.Spec.Containers[0].ImagePullPolicy)
	}
}
