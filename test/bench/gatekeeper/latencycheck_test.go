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
	for _, c := range pod.Spec.Containers {
		for i := range presetCount {
			if envValue(c, fmt.Sprintf("PRESET_%d", i)) != "yes" {
				problems = append(problems, fmt.Sprintf("container %s lacks PRESET_%d", c.Name, i))
			}
		}
	}
	return problems
}

// mutationProblems is what pod lacks of the ten mutators of
// ten-pod-mutators.yaml.
func mutationProblems(pod *corev1.Pod) []string {
	var problems []string
	want := func(ok bool, format string, args ...any) {
		if !ok {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	want(pod.Labels["owner"] == "platform", "label owner %q", pod.Labels["owner"])
	want(pod.Annotations["mutated-by"] == "locationmutator", "annotation mutated-by %q", pod.Annotations["mutated-by"])
	sc := pod.Spec.SecurityContext
	want(sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot, "spec.securityContext %v", sc)
	grace := pod.Spec.TerminationGracePeriodSeconds
	want(grace != nil && *grace == 30, "terminationGracePeriodSeconds %v", grace)
	for _, c := range pod.Spec.Containers {
		want(c.ImagePullPolicy == corev1.PullAlways, "container %s imagePullPolicy %s", c.Name, c.ImagePullPolicy)
		want(envValue(c, "CLUSTER") == "prod-1", "container %s env CLUSTER %q", c.Name, envValue(c, "CLUSTER"))
		want(envValue(c, "NAMESPACE") == pod.Namespace, "container %s env NAMESPACE %q", c.Name, envValue(c, "NAMESPACE"))
		csc := c.SecurityContext
		want(csc != nil && csc.AllowPrivilegeEscalation != nil && !*csc.AllowPrivilegeEscalation, "container %s securityContext %v", c.Name, csc)
		want(strings.HasPrefix(c.Image, "mirror.example.com/"), "container %s image %s", c.Name, c.Image)
		want(!slices.Contains(c.Args, "--alsologtostderr"), "container %s args %v", c.Name, c.Args)
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
