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

package gatekeeper

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// presetCount presets select the benchmark's pods, each injecting its own
// env var, the first also a volume and its mount.
const presetCount = 5

// presetAnnotationPrefix marks each preset applied to a pod.
const presetAnnotationPrefix = "podpreset.admission.kubernetes.io/"

func benchPresets(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var docs strings.Builder
	for i := range presetCount {
		fmt.Fprintf(&docs, `---
apiVersion: settings.k8s.io/v1alpha1
kind: PodPreset
metadata: {name: preset-%d, namespace: %s}
spec:
  selector: {matchLabels: {app: web}}
  env: [{name: PRESET_%d, value: "yes"}]
`, i, latencyNamespace, i)
		if i == 0 {
			docs.WriteString("  volumes: [{name: scratch, emptyDir: {}}]\n  volumeMounts: [{name: scratch, mountPath: /scratch}]\n")
		}
	}
	objs, err := parseObjects([]byte(docs.String()))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// presetProblems is what pod lacks of the presets.
func presetProblems(pod *corev1.Pod) []string {
	var problems []string
	var applied int
	for k := range pod.Annotations {
		if strings.HasPrefix(k, presetAnnotationPrefix) {
			applied++
		}
	}
	if applied != presetCount {
		problems = append(problems, fmt.Sprintf("%d preset annotations, want %d", applied, presetCount))
	}
	for i := range presetCount {
		problems = append(problems, presetEnvProblems(pod, i)...)
	}
	return problems
}

// presetAppliedProblems is what pod lacks of benchPresets' preset i: its
// annotation and its env var.
func presetAppliedProblems(pod *corev1.Pod, i int) []string {
	key := fmt.Sprintf("%spodpreset-preset-%d", presetAnnotationPrefix, i)
	problems := presetEnvProblems(pod, i)
	if _, ok := pod.Annotations[key]; !ok {
		problems = append(problems, "no annotation "+key)
	}
	return problems
}

// presetEnvProblems is what pod lacks of preset i's env var.
func presetEnvProblems(pod *corev1.Pod, i int) []string {
	var problems []string
	for _, c := range pod.Spec.Containers {
		if envValue(c, fmt.Sprintf("PRESET_%d", i)) != "yes" {
			problems = append(problems, fmt.Sprintf("container %s lacks PRESET_%d", c.Name, i))
		}
	}
	return problems
}

// mutatorChecks says, for each mutator of ten-pod-mutators.yaml by name,
// what pod lacks of its mutation, so that a scenario carrying only some
// of them (what compiled) is checked for exactly those.
var mutatorChecks = map[string]func(pod *corev1.Pod) []string{
	"always-pull": eachContainer(func(c corev1.Container, _ *corev1.Pod) (bool, string) {
		return c.ImagePullPolicy == corev1.PullAlways, fmt.Sprintf("container %s imagePullPolicy %s", c.Name, c.ImagePullPolicy)
	}),
	"owner": podCheck(func(pod *corev1.Pod) (bool, string) {
		return pod.Labels["owner"] == "platform", fmt.Sprintf("label owner %q", pod.Labels["owner"])
	}),
	"non-root": podCheck(func(pod *corev1.Pod) (bool, string) {
		sc := pod.Spec.SecurityContext
		return sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot, fmt.Sprintf("spec.securityContext %v", sc)
	}),
	"env-cluster": eachContainer(func(c corev1.Container, _ *corev1.Pod) (bool, string) {
		return envValue(c, "CLUSTER") == "prod-1", fmt.Sprintf("container %s env CLUSTER %q", c.Name, envValue(c, "CLUSTER"))
	}),
	"env-namespace": eachContainer(func(c corev1.Container, pod *corev1.Pod) (bool, string) {
		return envValue(c, "NAMESPACE") == pod.Namespace, fmt.Sprintf("container %s env NAMESPACE %q", c.Name, envValue(c, "NAMESPACE"))
	}),
	"no-privilege-escalation": eachContainer(func(c corev1.Container, _ *corev1.Pod) (bool, string) {
		csc := c.SecurityContext
		return csc != nil && csc.AllowPrivilegeEscalation != nil && !*csc.AllowPrivilegeEscalation, fmt.Sprintf("container %s securityContext %v", c.Name, csc)
	}),
	"termination-grace": podCheck(func(pod *corev1.Pod) (bool, string) {
		grace := pod.Spec.TerminationGracePeriodSeconds
		return grace != nil && *grace == 30, fmt.Sprintf("terminationGracePeriodSeconds %v", grace)
	}),
	"no-alsologtostderr": eachContainer(func(c corev1.Container, _ *corev1.Pod) (bool, string) {
		return !slices.Contains(c.Args, "--alsologtostderr"), fmt.Sprintf("container %s args %v", c.Name, c.Args)
	}),
	"mutated-by": podCheck(func(pod *corev1.Pod) (bool, string) {
		return pod.Annotations["mutated-by"] == "locationmutator", fmt.Sprintf("annotation mutated-by %q", pod.Annotations["mutated-by"])
	}),
	"mirror": eachContainer(func(c corev1.Container, _ *corev1.Pod) (bool, string) {
		return strings.HasPrefix(c.Image, "mirror.example.com/"), fmt.Sprintf("container %s image %s", c.Name, c.Image)
	}),
}

// podCheck and eachContainer turn a test of the pod, or of each of its
// containers, into a check: the test's message is the problem when it
// fails.
func podCheck(ok func(pod *corev1.Pod) (bool, string)) func(*corev1.Pod) []string {
	return func(pod *corev1.Pod) []string {
		if good, problem := ok(pod); !good {
			return []string{problem}
		}
		return nil
	}
}

func eachContainer(ok func(c corev1.Container, pod *corev1.Pod) (bool, string)) func(*corev1.Pod) []string {
	return func(pod *corev1.Pod) []string {
		var problems []string
		for _, c := range pod.Spec.Containers {
			if good, problem := ok(c, pod); !good {
				problems = append(problems, problem)
			}
		}
		return problems
	}
}

// mutationProblems is what pod lacks of the ten mutators of
// ten-pod-mutators.yaml.
func mutationProblems(pod *corev1.Pod) []string {
	var problems []string
	for _, name := range slices.Sorted(maps.Keys(mutatorChecks)) {
		problems = append(problems, mutatorChecks[name](pod)...)
	}
	return problems
}

// unmutated is what the baseline's pod has of the other scenarios'
// mutations: nothing, or the comparison measures something else.
func unmutated(pod *corev1.Pod) []string {
	var problems []string
	if v, ok := pod.Labels["owner"]; ok {
		problems = append(problems, "label owner="+v)
	}
	for k, v := range pod.Annotations {
		if k == "mutated-by" || strings.HasPrefix(k, presetAnnotationPrefix) {
			problems = append(problems, fmt.Sprintf("annotation %s=%s", k, v))
		}
	}
	return problems
}

func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
