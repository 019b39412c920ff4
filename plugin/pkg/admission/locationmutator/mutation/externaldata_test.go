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

package mutation

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/externaldata"
)

// digests is the table the tests' provider answers from.
var digests = map[string]string{
	"nginx:1.27": "nginx@sha256:1111",
	"redis:7":    "redis@sha256:2222",
	"alice":      "team-a",
}

// resolveRounds runs the mutators the way the plugin does: a round, the
// keys it asked for answered from digests (a key not there fails), and
// again, until no new key is asked for. It returns the keys of each call.
func resolveRounds(t *testing.T, run func(*External) (Result, error), username string) (Result, [][]string, error) {
	t.Helper()
	ext := NewExternal(username)
	var (
		all   Result
		calls [][]string
	)
	for round := 0; ; round++ {
		if round == 3 {
			ext.Finish()
		}
		res, err := run(ext)
		all.Applied = append(all.Applied, res.Applied...)
		if err != nil {
			return all, calls, err
		}
		want := ext.Wanted()
		if len(want) == 0 {
			return all, calls, nil
		}
		answers := map[string]map[string]externaldata.Answer{}
		for p, keys := range want {
			slices.Sort(keys)
			calls = append(calls, keys)
			answers[p] = map[string]externaldata.Answer{}
			for _, k := range keys {
				if v, ok := digests[k]; ok && p == "tags" {
					answers[p][k] = externaldata.Answer{Value: v}
				} else {
					answers[p][k] = externaldata.Answer{Err: errors.New("no such tag")}
				}
			}
		}
		ext.Add(answers)
	}
}

func externalAssign(t *testing.T, policy, extra string) *Mutator {
	t.Helper()
	return mustDecode(t, `apiVersion: mutations.gatekeeper.sh/v1
kind: Assign
metadata: {name: digest}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: 'spec.containers[name: *].image'
  parameters:
    assign:
      externalData: {provider: tags, failurePolicy: `+policy+extra+`}
`)
}

func podWith(images ...string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}}
	for i, img := range images {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: string(rune('a' + i)), Image: img})
	}
	return pod
}

func images(pod *corev1.Pod) []string {
	var out []string
	for _, c := range pod.Spec.Containers {
		out = append(out, c.Image)
	}
	return out
}

func TestExternalDataFailurePolicies(t *testing.T) {
	tests := []struct {
		name    string
		policy  string
		images  []string
		want    []string
		wantErr string
	}{
		{"answers", "Fail", []string{"nginx:1.27", "redis:7", "nginx:1.27"}, []string{"nginx@sha256:1111", "redis@sha256:2222", "nginx@sha256:1111"}, ""},
		{"Fail refuses", "Fail", []string{"nginx:1.27", "busybox:1"}, nil, "no such tag"},
		{"Ignore keeps the value", "Ignore", []string{"nginx:1.27", "busybox:1"}, []string{"nginx@sha256:1111", "busybox:1"}, ""},
		{"UseDefault writes the default", "UseDefault, default: 'registry.local/blocked:0'", []string{"busybox:1", "redis:7"}, []string{"registry.local/blocked:0", "redis@sha256:2222"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			policy, extra, _ := strings.Cut(tc.policy, ",")
			if extra != "" {
				extra = "," + extra
			}
			m := externalAssign(t, policy, extra)
			for _, typed := range []bool{true, false} {
				pod := podWith(tc.images...)
				var run func(*External) (Result, error)
				var obj map[string]any
				if typed {
					run = func(x *External) (Result, error) {
						return Mutate([]*Mutator{m}, pod, podTarget(), Options{External: x})
					}
				} else {
					obj = toUnstructured(t, pod)
					run = func(x *External) (Result, error) {
						return Mutate([]*Mutator{m}, &unstructured.Unstructured{Object: obj}, podTarget(), Options{External: x})
					}
				}
				res, calls, err := resolveRounds(t, run, "alice")
				if tc.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), `Assign/digest`) {
						t.Errorf("typed=%v: %v, want an error with %q naming the mutator", typed, err, tc.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatalf("typed=%v: %v", typed, err)
				}
				if !typed {
					pod = fromUnstructured(t, obj)
				}
				if got := images(pod); !slices.Equal(got, tc.want) {
					t.Errorf("typed=%v: images %v, want %v", typed, got, tc.want)
				}
				// One call with every key once; the values written are
				// never sent again as keys.
				if len(calls) != 1 {
					t.Errorf("typed=%v: calls %v, want one", typed, calls)
				}
				if !slices.Equal(IDs(res.Applied), []ID{{Kind: "Assign", Name: "digest"}}) {
					t.Errorf("typed=%v: applied %v", typed, IDs(res.Applied))
				}
			}
		})
	}
}

// Username sends the requester's name, for Assign and AssignMetadata.
func TestExternalDataUsername(t *testing.T) {
	m := mustDecode(t, `apiVersion: mutations.gatekeeper.sh/v1
kind: AssignMetadata
metadata: {name: team}
spec:
  location: metadata.labels.team
  parameters:
    assign:
      externalData: {provider: tags, dataSource: Username}
`)
	obj := toUnstructured(t, podWith("nginx:1.27"))
	_, calls, err := resolveRounds(t, func(x *External) (Result, error) {
		return Mutate([]*Mutator{m}, &unstructured.Unstructured{Object: obj}, podTarget(), Options{External: x})
	}, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if got := fromUnstructured(t, obj).Labels["team"]; got != "team-a" {
		t.Errorf("label team=%q, want team-a", got)
	}
	if len(calls) != 1 || !slices.Equal(calls[0], []string{"alice"}) {
		t.Errorf("calls %v, want the username once", calls)
	}
}

// Without external data (an offline host) the failure policy decides.
func TestExternalDataUnavailable(t *testing.T) {
	pod := podWith("nginx:1.27")
	if _, err := Mutate([]*Mutator{externalAssign(t, "Fail", "")}, pod, podTarget(), Options{}); err == nil || !strings.Contains(err.Error(), "cannot be fetched") {
		t.Errorf("Fail: %v", err)
	}
	if _, err := Mutate([]*Mutator{externalAssign(t, "UseDefault", ", default: x:1")}, pod, podTarget(), Options{}); err != nil || pod.Spec.Containers[0].Image != "x:1" {
		t.Errorf("UseDefault: %v, image %s", err, pod.Spec.Containers[0].Image)
	}
	if !externalAssign(t, "Fail", "").UsesExternalData() || assign(t, "a", "spec.x", "1").UsesExternalData() {
		t.Error("UsesExternalData")
	}
}

func toUnstructured(t *testing.T, pod *corev1.Pod) map[string]any {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func fromUnstructured(t *testing.T, obj map[string]any) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}
