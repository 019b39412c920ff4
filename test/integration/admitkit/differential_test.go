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
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
	"github.com/admitkit/admitkit/test/integration/framework"
)

// diffNamespace holds the differential test's objects on each host. Its
// name puts it under the configured lm-* mutators, so that every pod in it
// is mutated by the LocationMutator as well as by its presets.
const diffNamespace = "lm-diff"

var (
	podsGVR              = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	podPresetsGVR        = schema.GroupVersionResource{Group: "settings.k8s.io", Version: "v1alpha1", Resource: "podpresets"}
	clusterPodPresetsGVR = schema.GroupVersionResource{Group: "settings.k8s.io", Version: "v1alpha1", Resource: "clusterpodpresets"}
)

// diffRequest is one request the differential test sends to every host.
type diffRequest struct {
	name     string
	resource schema.GroupVersionResource
	// namespace is diffNamespace unless set; ClusterPodPresets have none.
	namespace string
	// update replaces the object, which must exist, rather than creating it.
	update bool
	dryRun bool
	// manifest is the object sent, in YAML.
	manifest string
	// refused says that every host must refuse it: a request that fails
	// where it should not (an object left by an earlier run) fails the
	// test rather than agreeing.
	refused bool
}

// diffOutcome is what a host made of a request, with what legitimately
// differs between hosts taken out (normalizeObject).
type diffOutcome struct {
	// Response is the object the server answered with.
	Response map[string]any
	// Stored is the object read back afterwards; nil when nothing was to
	// be stored.
	Stored   map[string]any
	Warnings []string
	Refusal  *diffRefusal
}

// diffRefusal is what a client learns of a refused request.
type diffRefusal struct {
	Code    int32
	Reason  metav1.StatusReason
	Causes  []metav1.StatusCause
	Message string
}

// TestHostsAgree sends the same requests, in the same order, to every host
// set up alike (setUpDiff), and requires the same outcome of each host as
// of the in-process one: the same stored objects, warnings and refusals.
func TestHostsAgree(t *testing.T) {
	requests := diffRequests()
	outcomes := make([][]diffOutcome, len(hosts))
	for i, h := range hosts {
		t.Run("send/"+h.name, func(t *testing.T) {
			setUpDiff(t, h)
			for _, req := range requests {
				out := sendDiffRequest(t, h, req)
				if (out.Refusal != nil) != req.refused {
					t.Errorf("%s: refusal %+v, want refused %v", req.name, out.Refusal, req.refused)
				}
				outcomes[i] = append(outcomes[i], out)
			}
		})
	}
	if t.Failed() {
		return
	}
	for i, h := range hosts[1:] {
		for j, req := range requests {
			t.Run(h.name+"/"+req.name, func(t *testing.T) {
				if d := cmp.Diff(outcomes[0][j], outcomes[i+1][j]); d != "" {
					t.Errorf("%s and %s disagree (-%s +%s):\n%s", hosts[0].name, h.name, hosts[0].name, h.name, d)
				}
			})
		}
	}
}

// sendDiffRequest sends req to h as the admin and records the outcome.
func sendDiffRequest(t *testing.T, h *host, req diffRequest) diffOutcome {
	t.Helper()
	ctx := context.Background()
	warnings := &warningRecorder{}
	cfg := rest.CopyConfig(h.server.AdminConfig())
	cfg.WarningHandler = warnings
	resource := resourceOf(t, cfg, req)
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(req.manifest), &obj.Object); err != nil {
		t.Fatalf("%s: %v", req.name, err)
	}
	var dryRun []string
	if req.dryRun {
		dryRun = []string{metav1.DryRunAll}
	}
	var got *unstructured.Unstructured
	var err error
	if req.update {
		got, err = updateKeepingVersion(ctx, resource, obj, dryRun)
	} else {
		got, err = resource.Create(ctx, obj, metav1.CreateOptions{DryRun: dryRun})
	}
	out := diffOutcome{Warnings: warnings.all()}
	if err != nil {
		out.Refusal = refusalOf(t, req.name, err)
		checkDenyingWebhook(t, h, req, err)
		return out
	}
	out.Response = normalizeObject(got.Object)
	if !req.dryRun {
		stored, err := resource.Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: reading it back: %v", req.name, err)
		}
		out.Stored = normalizeObject(stored.Object)
	}
	return out
}

// updateKeepingVersion replaces obj with the resourceVersion it has now, as
// kubectl replace does: a custom resource's update must carry one (README,
// "What differs from in-process"), which in-process is optional.
func updateKeepingVersion(ctx context.Context, resource dynamic.ResourceInterface, obj *unstructured.Unstructured, dryRun []string) (*unstructured.Unstructured, error) {
	current, err := resource.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	obj.SetResourceVersion(current.GetResourceVersion())
	return resource.Update(ctx, obj, metav1.UpdateOptions{DryRun: dryRun})
}

// resourceOf is the resource of req in its namespace, or cluster-wide for
// ClusterPodPresets.
func resourceOf(t *testing.T, cfg *rest.Config, req diffRequest) dynamic.ResourceInterface {
	t.Helper()
	client := framework.DynamicClient(t, cfg).Resource(req.resource)
	switch {
	case req.resource == clusterPodPresetsGVR:
		return client
	case req.namespace != "":
		return client.Namespace(req.namespace)
	}
	return client.Namespace(diffNamespace)
}

// webhookDenial is how kube-apiserver words a refusal by a webhook before
// the webhook's own message (README, "What differs from in-process").
var webhookDenial = regexp.MustCompile(`admission webhook "([^"]+)" denied the request: `)

// checkDenyingWebhook: on the webhook host, a pod create that admitkit's
// plugins refuse is refused by the webhook that runs them both.
func checkDenyingWebhook(t *testing.T, h *host, req diffRequest, err error) {
	t.Helper()
	m := webhookDenial.FindStringSubmatch(err.Error())
	if h.webhook == nil || m == nil || req.resource != podsGVR || req.update {
		return
	}
	if m[1] != podWebhook {
		t.Errorf("%s: refused by the webhook %q, want %q: %v", req.name, m[1], podWebhook, err)
	}
}

func refusalOf(t *testing.T, name string, err error) *diffRefusal {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("%s: %v is not an API status", name, err)
	}
	s := status.Status()
	r := &diffRefusal{Code: s.Code, Reason: s.Reason, Message: webhookDenial.ReplaceAllString(s.Message, "")}
	if s.Details != nil {
		r.Causes = s.Details.Causes
	}
	return r
}

// normalizeObject takes out of a stored object what differs between any
// two servers, or two requests to one server, by design:
//   - uid, resourceVersion and creationTimestamp are the server's own;
//   - managedFields carry times, and the fields a CRD's apply schema and a
//     built-in type's track are not the same set (server-side apply is
//     compared by its results elsewhere);
//   - the values of PodPreset's annotations are the presets'
//     resourceVersions, which are each server's own;
//   - gatekeeper.sh/mutation-id is a new UUID on every admission;
//   - the ServiceAccount plugin names its token volume with a random
//     suffix, and adds it (and its mounts) after PodPreset's in-process but
//     before PodPreset's webhook on a stock server, which calls webhooks
//     after its own plugins (README, "What differs from in-process"): the
//     token's entries are compared last in their lists.
func normalizeObject(obj map[string]any) map[string]any {
	obj = (&unstructured.Unstructured{Object: obj}).DeepCopy().Object
	for _, field := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields"} {
		unstructured.RemoveNestedField(obj, "metadata", field)
	}
	annotations, _, _ := unstructured.NestedStringMap(obj, "metadata", "annotations")
	for key := range annotations {
		if strings.HasPrefix(key, presetAnnotationPrefix+"podpreset-") || strings.HasPrefix(key, presetAnnotationPrefix+"clusterpodpreset-") || key == locationmutator.MutationIDAnnotation {
			annotations[key] = "(set)"
		}
	}
	if len(annotations) > 0 {
		_ = unstructured.SetNestedStringMap(obj, annotations, "metadata", "annotations")
	}
	renameTokenVolume(obj)
	return obj
}

// tokenVolume matches the name of the ServiceAccount plugin's token volume.
var tokenVolume = regexp.MustCompile(`^kube-api-access-[a-z0-9]{5}$`)

// renameTokenVolume drops the random suffix of the token volume's name in
// a pod's volumes and in its containers' volumeMounts, and moves those
// entries to the end of their lists.
func renameTokenVolume(obj map[string]any) {
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		return
	}
	tokenLast := func(items any) any {
		list, _ := items.([]any)
		var others, tokens []any
		for _, item := range list {
			m, ok := item.(map[string]any)
			if name, _ := m["name"].(string); ok && tokenVolume.MatchString(name) {
				m["name"] = "kube-api-access-*"
				tokens = append(tokens, item)
				continue
			}
			others = append(others, item)
		}
		if list == nil {
			return items
		}
		return append(others, tokens...)
	}
	if _, ok := spec["volumes"]; ok {
		spec["volumes"] = tokenLast(spec["volumes"])
	}
	for _, key := range []string{"initContainers", "containers"} {
		containers, _ := spec[key].([]any)
		for _, c := range containers {
			if m, ok := c.(map[string]any); ok {
				if _, ok := m["volumeMounts"]; ok {
					m["volumeMounts"] = tokenLast(m["volumeMounts"])
				}
			}
		}
	}
}

// setUpDiff gives h the namespace, presets and mutators the requests meet,
// and waits until h's plugins have them all.
func setUpDiff(t *testing.T, h *host) {
	t.Helper()
	ctx := context.Background()
	framework.CreateNamespace(t, h.server.AdminConfig(), diffNamespace, map[string]string{"admitkit-diff": "yes"})
	// The configured lm-string-port mutator refuses pods there.
	framework.CreateNamespace(t, h.server.AdminConfig(), "lm-reject", nil)
	// Created first: no pod shows a preset in Audit mode, so that it has
	// reached the plugin is known from the presets created after it,
	// which the same watch delivers later.
	h.mustKubectl(t, presetYAML(diffNamespace, "audit", "  mode: Audit\n"), "apply", "-f", "-")
	for _, p := range []struct{ name, extra string }{
		{"enforced", "  volumes:\n  - {name: certs, emptyDir: {}}\n  volumeMounts:\n  - {name: certs, mountPath: /etc/certs}\n"},
		{"pod-wins", "  conflictPolicy: PodWins\n"},
		{"preset-wins", "  conflictPolicy: PresetWins\n  containers: {names: [app]}\n"},
		{"reject", "  conflictPolicy: Reject\n"},
		{"skip-all", "  conflictPolicy: SkipAll\n"},
		{"to-update", "  conflictPolicy: PodWins\n  containers: {names: [app]}\n  initContainers: {names: []}\n"},
	} {
		applyPresetYAML(t, h, diffNamespace, p.name, p.extra)
	}
	h.mustKubectl(t, diffClusterPreset, "apply", "-f", "-")
	// diff-cluster-2 is one of the requests.
	t.Cleanup(func() {
		h.kubectl(t, "", "delete", "clusterpodpreset", "diff-cluster", "diff-cluster-2", "--ignore-not-found")
	})
	h.mustKubectl(t, presetYAML(diffNamespace, "warn", "  mode: Warn\n  containers: {names: [app]}\n"), "apply", "-f", "-")

	mutators := framework.DynamicClient(t, h.server.AdminConfig())
	if _, err := mutators.Resource(assignMetadataGVR).Create(ctx, framework.AnnotationMutator(t, "diff-live", diffNamespace, "diff-live", "yes"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.kubectl(t, "", "delete", "assignmetadata", "diff-live") })
	// In Warn mode, on a field no enforced mutator sets: a Warn-mode
	// mutator whose change an enforced one overwrites is not reported.
	warnMutator := framework.AnnotationMutator(t, "diff-warn", diffNamespace, "diff-warn", "yes")
	warnMutator.SetAnnotations(map[string]string{mutation.ModeAnnotation: "Warn"})
	if _, err := mutators.Resource(assignMetadataGVR).Create(ctx, warnMutator, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.kubectl(t, "", "delete", "assignmetadata", "diff-warn") })
	waitForDiffSetUp(t, h)
}

// waitForDiffSetUp creates a probe pod with dry run until the last preset
// and both mutators show on it.
func waitForDiffSetUp(t *testing.T, h *host) {
	t.Helper()
	probe := withClusterLabel(podYAML(diffNamespace, "probe", "warn", ""))
	waitForWarning(t, h, probe, `PodPreset "warn" is in Warn mode`)
	waitForWarning(t, h, probe, `AssignMetadata "diff-warn" is in Warn mode`)
	framework.Poll(t, "the annotation mutator and the ClusterPodPreset", func() bool {
		r := h.kubectl(t, probe, "create", "--dry-run=server", "-o", "json", "-f", "-")
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		pod := decodePod(t, r.Stdout)
		return pod.Annotations["diff-live"] == "yes" && pod.Annotations[presetAnnotationPrefix+"clusterpodpreset-diff-cluster"] != ""
	})
}

// diffClusterPreset selects the pods labelled cluster=yes in the
// differential namespace.
const diffClusterPreset = `apiVersion: settings.k8s.io/v1alpha1
kind: ClusterPodPreset
metadata:
  name: diff-cluster
spec:
  namespaceSelector:
    matchLabels: {admitkit-diff: "yes"}
  selector:
    matchLabels: {cluster: "yes"}
  envFrom:
  - configMapRef: {name: cluster-settings}
  volumes:
  - name: scratch
    emptyDir: {sizeLimit: 1Gi}
  volumeMounts:
  - {name: scratch, mountPath: /scratch, readOnly: true}
`
