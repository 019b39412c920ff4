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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin/fuzzobjectstest"
	"github.com/admitkit/admitkit/test/integration/framework"
)

// TestOfflineIsTheServer is the proof that `admitkit admit` is the
// server: for random namespaces, presets, mutators and pods (package
// fuzzobjectstest's generators), what admit prints for a pod equals what the
// server stores for the same create, less what only a server can write,
// and a refusal on one side is a refusal with the same message on the
// other. ADMITKIT_OFFLINE_SEED sets the seed (logged on every run) and
// ADMITKIT_OFFLINE_CASES the number of cases. The seed is 1 unless set, so
// that every run of the suite admits the same cases, as the unit tests'
// differential tests do; other seeds are for exploring.
func TestOfflineIsTheServer(t *testing.T) {
	seed := envNumber(t, "ADMITKIT_OFFLINE_SEED", 1)
	cases := envNumber(t, "ADMITKIT_OFFLINE_CASES", 24)
	t.Logf("seed %d (ADMITKIT_OFFLINE_SEED=%d reruns these cases), %d cases", seed, seed, cases)
	admit, err := framework.BuildCommand("admitkit")
	if err != nil {
		t.Fatal(err)
	}
	// The in-process host: its plugins run inside kube-apiserver, while
	// admit runs them through the webhook host's Review, so agreement
	// proves one code path.
	o := newOfflineRun(t, inProcess(), admit)
	var tally offlineTally
	for i := range int(cases) {
		c := newOfflineCase(seed, i)
		if !t.Run(strconv.Itoa(i), func(t *testing.T) { o.check(t, c, &tally) }) {
			t.Logf("case %d of seed %d:\n%s", i, seed, c.describe())
		}
	}
	t.Logf("%+v", tally)
	// The cases must reach both outcomes and the plugins' changes, or the
	// comparison proves little.
	if tally.Admitted == 0 || tally.Refused == 0 || tally.Changed == 0 {
		t.Errorf("too few cases of each kind: %+v", tally)
	}
}

// offlineTally counts what the cases came to.
type offlineTally struct {
	// Admitted and Refused are pods both sides stored or refused; Changed
	// the admitted ones a plugin changed; Invalid the ones kube-apiserver's
	// own validation refused; StateRefused the presets and mutators the
	// server refused to store.
	Admitted, Refused, Changed, Invalid, StateRefused int
}

func envNumber(t *testing.T, name string, def uint64) uint64 {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// offlineCase is one namespace with its presets and mutators, and a pod
// to create in it.
type offlineCase struct {
	namespace *corev1.Namespace
	presets   []runtime.Object
	mutators  []*unstructured.Unstructured
	pod       *corev1.Pod
}

// newOfflineCase draws case i of seed: presets and a pod from
// fuzzobjectstest.PodPresets, or (every other case) a pod from
// fuzzobjectstest.TypedPod, and mutators from fuzzobjectstest.Mutators, all
// scoped to the case's namespace so that the cases leave each other (and
// the package's other tests) alone.
func newOfflineCase(seed uint64, i int) offlineCase {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	data := make([]byte, 400)
	for j := range data {
		data[j] = byte(rng.UintN(256))
	}
	s := fuzzobjectstest.NewSource(data)
	ns := fmt.Sprintf("offline-%d", i)
	c := offlineCase{namespace: &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"offline-case": ns, "tier": []string{"a", "b"}[s.Next(2)]}}}}
	presets := &fuzzobjectstest.PodPresets{Source: s, Namespace: ns, NamespaceSelector: metav1.LabelSelector{
		MatchLabels: map[string]string{"offline-case": ns, "tier": []string{"a", "b"}[s.Next(2)]}}}
	c.presets = latestPresets(presets.Presets(), ns)
	if i%2 == 0 {
		c.pod = presets.Pod()
	} else {
		c.pod = fuzzobjectstest.TypedPod(s)
	}
	mutators := &fuzzobjectstest.Mutators{Source: s}
	for j := s.Next(6); j >= 0; j-- {
		c.mutators = append(c.mutators, scopedMutator(mutators.Mutator(j), ns))
	}
	c.pod.Namespace = ns
	runnable(c.pod)
	return c
}

// latestPresets keeps the later of two presets of one kind and name, as a
// server does after an update, and names ClusterPodPresets (which every
// case shares) after the case's namespace.
func latestPresets(objs []runtime.Object, ns string) []runtime.Object {
	var out []runtime.Object
	for i, obj := range objs {
		// admit reads manifests, which carry their apiVersion and kind.
		switch p := obj.(type) {
		case *settingsv1alpha1.ClusterPodPreset:
			p.Name = ns + "-" + p.Name
			p.APIVersion, p.Kind = settingsv1alpha1.SchemeGroupVersion.String(), "ClusterPodPreset"
		case *settingsv1alpha1.PodPreset:
			p.APIVersion, p.Kind = settingsv1alpha1.SchemeGroupVersion.String(), "PodPreset"
		}
		if !slices.ContainsFunc(objs[i+1:], func(later runtime.Object) bool { return sameObject(obj, later) }) {
			out = append(out, obj)
		}
	}
	return out
}

func sameObject(a, b runtime.Object) bool {
	ma, mb := a.(metav1.Object), b.(metav1.Object)
	return fmt.Sprintf("%T", a) == fmt.Sprintf("%T", b) && ma.GetName() == mb.GetName()
}

// scopedMutator is the manifest of a generated mutator, named after the
// namespace ns (mutators are cluster-scoped) and matching it alone.
func scopedMutator(manifest any, ns string) *unstructured.Unstructured {
	data, err := json.Marshal(manifest)
	if err != nil {
		panic(err) // the generators' types always marshal
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		panic(err)
	}
	u.SetName(ns + "-" + u.GetName())
	if err := unstructured.SetNestedStringSlice(u.Object, []string{ns}, "spec", "match", "namespaces"); err != nil {
		panic(err)
	}
	return u
}

// runnable makes the generated pod one kube-apiserver's validation takes
// and its own mutating plugins leave alone, so that the cases compare the
// admitkit plugins rather than kube-apiserver's validation: at least one
// container, unique names, an image; and the fields ServiceAccount,
// Priority and DefaultTolerationSeconds would otherwise write, which
// offline does not run (they run before LocationMutator, whose mutators
// would see them only on the server).
func runnable(pod *corev1.Pod) {
	if len(pod.Spec.Containers) == 0 {
		pod.Spec.Containers = []corev1.Container{{Name: "main"}}
	}
	seen := map[string]bool{}
	fix := func(containers []corev1.Container, prefix string) {
		for i := range containers {
			c := &containers[i]
			if c.Name == "" || seen[c.Name] {
				c.Name = fmt.Sprintf("%s-%d", prefix, i)
			}
			seen[c.Name] = true
			if c.Image == "" {
				c.Image = "nginx:1.27"
			}
		}
	}
	fix(pod.Spec.InitContainers, "init")
	fix(pod.Spec.Containers, "main")
	pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount = "default", "default"
	pod.Spec.AutomountServiceAccountToken = ptr.To(false)
	pod.Spec.Priority = ptr.To[int32](0)
	pod.Spec.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
	for _, key := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)})
	}
}

func (c offlineCase) describe() string {
	var b strings.Builder
	for _, obj := range append([]any{c.namespace, c.pod}, toAny(c.presets)...) {
		data, _ := json.Marshal(obj)
		fmt.Fprintf(&b, "%s\n", data)
	}
	for _, m := range c.mutators {
		data, _ := m.MarshalJSON()
		fmt.Fprintf(&b, "%s\n", data)
	}
	return b.String()
}

func toAny[T any](items []T) []any {
	out := make([]any, len(items))
	for i := range items {
		out[i] = items[i]
	}
	return out
}

// offlineRun is one host's run: its clients, the probe namespace whose
// sentinels show the plugins caught up, and the admit binary.
type offlineRun struct {
	h        *host
	admit    string
	identity string
	dir      string
	// config is the LocationMutator configuration admit gets: the
	// server's mutationAnnotations (its static mutators match only lm-*
	// namespaces, none of the cases').
	config string
}

const offlineProbeNamespace = "offline-probe"

func newOfflineRun(t *testing.T, h *host, admit string) *offlineRun {
	framework.CreateNamespace(t, h.server.AdminConfig(), offlineProbeNamespace, map[string]string{"offline-probe": "true"})
	framework.CreateNamespace(t, h.server.AdminConfig(), offlinePlainNamespace, nil)
	dir := t.TempDir()
	// admit gets the server's own admission configuration and mutator
	// file, so that the configured mutators take part in the conflict
	// checks of the cases' live mutators as they do in the server.
	for name, content := range serverConfig().Files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(dir, "admission-config.yaml")
	if err := os.WriteFile(config, []byte(strings.ReplaceAll(serverConfig().AdmissionConfig, "$DATA_DIR", dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	return &offlineRun{h: h, admit: admit, identity: h.identity(t), dir: dir, config: config}
}

// check stores the case's state on the host, waits until the plugins
// hold it, then creates the pod on the server and with admit, and
// compares.
func (o *offlineRun) check(t *testing.T, c offlineCase, tally *offlineTally) {
	cfg := o.h.server.AdminConfig()
	framework.CreateNamespace(t, cfg, c.namespace.Name, c.namespace.Labels)
	presets, refusedPresets := o.createPresets(t, c)
	mutators, refusedMutators := o.createMutators(t, c)
	o.waitForState(t, c.namespace.Name)

	// Every admit of the case runs while the server creates the pod: they
	// are separate processes, and each spends most of its time starting.
	state := append(append([]any{c.namespace}, toAny(presets)...), toAny(mutators)...)
	refusedState := append(toAny(refusedPresets), toAny(refusedMutators)...)
	withRefused := make([]*admitRun, len(refusedState))
	for i, refused := range refusedState {
		withRefused[i] = o.startAdmit(t, c, append(slices.Clone(state), refused))
	}
	admitted := o.startAdmit(t, c, state)
	stored, serverErr := o.createPod(t, c.pod)
	for i, refused := range refusedState {
		// A preset or mutator the server refuses to store is bad input
		// offline, named as the server names it.
		tally.StateRefused++
		if res := withRefused[i].wait(t); res.code != 2 {
			t.Errorf("the server refused to store %s; admit with it exits %d, want 2 (bad input):\n%s", describeObject(refused), res.code, res.stderr)
		}
	}
	offline := admitted.wait(t)
	if len(offline.objects) > 1 {
		t.Errorf("admit printed %d objects for one pod", len(offline.objects))
	}
	switch {
	case serverErr != nil && offline.refusal != "":
		tally.Refused++
		if got, want := withoutWebhookPrefix(offline.refusal), withoutWebhookPrefix(serverErr.Error()); got != want {
			t.Errorf("both refused, with different messages:\nserver: %s\nadmit:  %s", want, got)
		}
	case serverErr != nil && apierrors.IsInvalid(serverErr) && offline.object != nil:
		// kube-apiserver's validation of a pod, which offline does not
		// run (README, Offline): what admit printed must be refused by it
		// with the same message in a namespace where no plugin acts.
		tally.Invalid++
		o.checkInvalid(t, offline.object, serverErr)
	case serverErr != nil:
		t.Errorf("the server refused the pod, admit did not (exit %d):\nserver: %v\nadmit stderr: %s", offline.code, serverErr, offline.stderr)
	case offline.object == nil:
		t.Errorf("the server stored the pod, admit refused it (exit %d): %s", offline.code, offline.stderr)
	default:
		tally.Admitted++
		o.compareStored(t, c.pod, stored, offline.object, tally)
	}
}

// createPresets creates the case's presets; the ones the server refuses
// (its validation) come back apart.
func (o *offlineRun) createPresets(t *testing.T, c offlineCase) (created, refused []runtime.Object) {
	client := framework.SettingsClient(t, o.h.server.AdminConfig()).SettingsV1alpha1()
	ctx := context.Background()
	for _, obj := range c.presets {
		var err error
		switch p := obj.(type) {
		case *settingsv1alpha1.PodPreset:
			_, err = client.PodPresets(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		case *settingsv1alpha1.ClusterPodPreset:
			_, err = client.ClusterPodPresets().Create(ctx, p, metav1.CreateOptions{})
			t.Cleanup(func() { _ = client.ClusterPodPresets().Delete(ctx, p.Name, metav1.DeleteOptions{}) })
		}
		switch {
		case apierrors.IsInvalid(err):
			t.Logf("the server refused to store %s: %v", describeObject(obj), err)
			refused = append(refused, obj)
		case err != nil:
			t.Fatalf("creating %s: %v", describeObject(obj), err)
		default:
			created = append(created, obj)
		}
	}
	return created, refused
}

// mutatorResources are the mutator kinds' resources.
var mutatorResources = map[string]schema.GroupVersionResource{
	"Assign":         assignGVR,
	"AssignMetadata": assignMetadataGVR,
	"ModifySet":      {Group: "mutations.gatekeeper.sh", Version: "v1", Resource: "modifyset"},
	"AssignImage":    {Group: "mutations.gatekeeper.sh", Version: "v1alpha1", Resource: "assignimage"},
}

// createMutators creates the case's mutators, deleted when the case ends;
// the ones the server refuses (their validation, or a conflict with one
// created before) come back apart. Each is held by the server before the
// next is created: admit takes the manifests in order, as one applied after
// the other, so the server's apply-time conflict check must have seen the
// mutators before it. (Created at once, two conflicting mutators can both
// be stored, and the server enforces the older: README, "Configured
// mutators win".)
func (o *offlineRun) createMutators(t *testing.T, c offlineCase) (created, refused []*unstructured.Unstructured) {
	client := framework.DynamicClient(t, o.h.server.AdminConfig())
	ctx := context.Background()
	for _, m := range c.mutators {
		resource := client.Resource(mutatorResources[m.GetKind()])
		_, err := resource.Create(ctx, m, metav1.CreateOptions{})
		switch {
		case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
			t.Logf("the server refused to store %s: %v", m.GetName(), err)
			refused = append(refused, m)
		case err != nil:
			t.Fatalf("creating %s: %v", describeObject(m), err)
		default:
			t.Cleanup(func() { _ = resource.Delete(ctx, m.GetName(), metav1.DeleteOptions{}) })
			o.waitForMutator(t, resource, m.GetName())
			// admit gets the manifest as written, not as stored.
			created = append(created, m)
		}
	}
	return created, refused
}

func describeObject(obj any) string {
	if m, ok := obj.(metav1.Object); ok {
		return fmt.Sprintf("%T %s", obj, m.GetName())
	}
	return fmt.Sprintf("%T", obj)
}

// waitForMutator waits until the host's plugin holds the named mutator:
// once this host's status entry observes its generation (the plugin writes
// it after publishing its snapshot).
func (o *offlineRun) waitForMutator(t *testing.T, resource dynamic.ResourceInterface, name string) {
	framework.Poll(t, "the status entry of "+name, func() bool {
		u, err := resource.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		e, ok := entryOf(u, o.identity)
		return ok && e["observedGeneration"] == u.GetGeneration()
	})
}

// waitForState waits until the host's plugins hold the case's presets
// (createMutators waited for each mutator). Presets have no status: a
// sentinel PodPreset and ClusterPodPreset, created after the case's and
// selecting only the probe namespace, reach a probe pod only after the
// informers delivered every earlier event of their kind.
func (o *offlineRun) waitForState(t *testing.T, ns string) {
	cfg := o.h.server.AdminConfig()
	ctx := context.Background()
	settings := framework.SettingsClient(t, cfg).SettingsV1alpha1()
	env := []corev1.EnvVar{{Name: "SENTINEL_" + strings.ReplaceAll(strings.ToUpper(ns), "-", "_"), Value: "x"}}
	preset := &settingsv1alpha1.PodPreset{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: settingsv1alpha1.PodPresetSpec{Env: env}}
	cluster := &settingsv1alpha1.ClusterPodPreset{ObjectMeta: metav1.ObjectMeta{Name: "sentinel-" + ns}, Spec: settingsv1alpha1.ClusterPodPresetSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"offline-probe": "true"}}, PodPresetSpec: settingsv1alpha1.PodPresetSpec{Env: env}}}
	if _, err := settings.PodPresets(offlineProbeNamespace).Create(ctx, preset, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = settings.PodPresets(offlineProbeNamespace).Delete(ctx, preset.Name, metav1.DeleteOptions{})
	})
	if _, err := settings.ClusterPodPresets().Create(ctx, cluster, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = settings.ClusterPodPresets().Delete(ctx, cluster.Name, metav1.DeleteOptions{}) })
	client := framework.KubeClient(t, cfg)
	framework.Poll(t, "the sentinel presets", func() bool {
		pod, err := client.CoreV1().Pods(offlineProbeNamespace).Create(ctx, framework.Pod("probe", nil, "c"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false
		}
		got := presetAnnotations(pod)
		return slices.Contains(got, "podpreset-"+preset.Name) && slices.Contains(got, "clusterpodpreset-"+cluster.Name)
	})
}

// admitResult is what one run of admit printed.
type admitResult struct {
	code int
	// objects are the objects admitted, in the order printed; object is
	// the first (the pod of a TestOfflineIsTheServer case), nil when
	// refused.
	objects []map[string]any
	object  map[string]any
	// refusal is the message of a refusal.
	refusal string
	stderr  string
}

// admitRun is one `admitkit admit` under way.
type admitRun struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
}

// startAdmit starts `admitkit admit` on the case's pod, with state
// as --state files and the server's mutator configuration.
func (o *offlineRun) startAdmit(t *testing.T, c offlineCase, state []any) *admitRun {
	t.Helper()
	dir, err := os.MkdirTemp(o.dir, "case-")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"admit", "-o", "json", "-n", c.namespace.Name, "--mutator-config", o.config}
	for i, obj := range append(state, podManifest(c.pod)) {
		file := filepath.Join(dir, fmt.Sprintf("%d.json", i))
		writeJSON(t, file, obj)
		if i < len(state) {
			args = append(args, "--state", file)
		} else {
			args = append(args, file)
		}
	}
	return o.startAdmitArgs(t, args...)
}

// startAdmitArgs starts the admitkit command with args.
func (o *offlineRun) startAdmitArgs(t *testing.T, args ...string) *admitRun {
	t.Helper()
	r := &admitRun{cmd: exec.Command(o.admit, args...)}
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return r
}

// wait waits for the run to end and returns what it printed.
func (r *admitRun) wait(t *testing.T) admitResult {
	t.Helper()
	var res admitResult
	var exit *exec.ExitError
	if err := r.cmd.Wait(); errors.As(err, &exit) {
		res.code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	res.stderr = r.stderr.String()
	switch res.code {
	case 0:
		var list struct{ Items []map[string]any }
		if err := json.Unmarshal(r.stdout.Bytes(), &list); err != nil || len(list.Items) == 0 {
			t.Fatalf("admit printed %d objects (%v):\n%s", len(list.Items), err, r.stdout.String())
		}
		res.objects, res.object = list.Items, list.Items[0]
	case 1:
		// The refusal's line; admit's exit message follows it.
		_, rest, _ := strings.Cut(res.stderr, " refused: ")
		res.refusal, _, _ = strings.Cut(rest, "\n")
	}
	return res
}

func podManifest(pod *corev1.Pod) *corev1.Pod {
	out := pod.DeepCopy()
	out.APIVersion, out.Kind = "v1", "Pod"
	return out
}

func writeJSON(t *testing.T, file string, obj any) {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// createPod creates pod on the host and returns what it stored, as JSON
// decodes it.
func (o *offlineRun) createPod(t *testing.T, pod *corev1.Pod) (map[string]any, error) {
	t.Helper()
	u := &unstructured.Unstructured{}
	data, err := json.Marshal(podManifest(pod))
	if err == nil {
		err = u.UnmarshalJSON(data)
	}
	if err != nil {
		t.Fatal(err)
	}
	pods := framework.DynamicClient(t, o.h.server.AdminConfig()).Resource(corev1.SchemeGroupVersion.WithResource("pods"))
	stored, err := pods.Namespace(pod.Namespace).Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	return asJSON(t, stored.Object), nil
}

// asJSON is obj as encoding/json decodes it (numbers as float64), so
// that objects from the client and from admit's output compare.
func asJSON(t *testing.T, obj any) map[string]any {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// withoutWebhookPrefix is a refusal's message without the prefix a
// kube-apiserver gives a webhook's.
func withoutWebhookPrefix(msg string) string {
	if _, rest, ok := strings.Cut(msg, " denied the request: "); ok && strings.HasPrefix(msg, "admission webhook ") {
		return rest
	}
	return msg
}

// offlinePlainNamespace has no presets or mutators: a pod created there
// meets kube-apiserver's defaulting and validation alone.
const offlinePlainNamespace = "offline-plain"

// checkInvalid checks that the pod admit printed is one kube-apiserver's
// validation refuses as it refused the case's pod on the server.
func (o *offlineRun) checkInvalid(t *testing.T, printed map[string]any, serverErr error) {
	t.Helper()
	u := &unstructured.Unstructured{Object: printed}
	u.SetNamespace(offlinePlainNamespace)
	pods := framework.DynamicClient(t, o.h.server.AdminConfig()).Resource(corev1.SchemeGroupVersion.WithResource("pods"))
	_, err := pods.Namespace(offlinePlainNamespace).Create(context.Background(), u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil || err.Error() != serverErr.Error() {
		t.Errorf("the server refused the pod as invalid, admit admitted it; what admit printed is refused with another message:\nserver: %v\nadmit's pod: %v", serverErr, err)
	}
}

// compareStored fails t when the pod admit printed is not the one the
// server stored, less what only a server writes.
func (o *offlineRun) compareStored(t *testing.T, pod *corev1.Pod, stored, printed map[string]any, tally *offlineTally) {
	t.Helper()
	server, offline := withoutServerFields(stored), withoutServerFields(printed)
	if diff := cmp.Diff(server, offline); diff != "" {
		t.Errorf("admit printed another pod than the server stored (-server +admit):\n%s", diff)
	}
	if !cmp.Equal(offline, withoutServerFields(asJSON(t, podManifest(pod)))) {
		tally.Changed++
	}
}

// withoutServerFields is a copy of a pod without what a server writes
// and offline cannot, each for the reason given; everything else must be
// equal, including what kube-apiserver's defaulting gives (offline runs
// the same defaults) and the annotations' keys.
func withoutServerFields(pod map[string]any) map[string]any {
	out := runtime.DeepCopyJSON(pod)
	// Storage bookkeeping: a create's uid, resourceVersion, timestamp,
	// field managers and (for pods since 1.35) generation.
	for _, f := range []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"} {
		unstructured.RemoveNestedField(out, "metadata", f)
	}
	// The server makes the name of a generateName pod after admission.
	if generate, _, _ := unstructured.NestedString(out, "metadata", "generateName"); generate != "" {
		unstructured.RemoveNestedField(out, "metadata", "name")
	}
	// The pod strategy writes status; no admission plugin does.
	delete(out, "status")
	annotations, _, _ := unstructured.NestedStringMap(out, "metadata", "annotations")
	for k := range annotations {
		// A preset annotation holds the preset's resourceVersion, which
		// only storage gives (README, Offline: "" offline); the mutation
		// id is a fresh UUID per admission.
		if strings.HasPrefix(k, presetAnnotationPrefix) || k == "gatekeeper.sh/mutation-id" {
			annotations[k] = ""
		}
	}
	if len(annotations) > 0 {
		_ = unstructured.SetNestedStringMap(out, annotations, "metadata", "annotations")
	}
	return out
}
