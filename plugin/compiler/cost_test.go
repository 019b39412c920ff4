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

package compiler_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/compilertest"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// benchPresets are test/bench/gatekeeper's five presets: PodPresets of
// namespace bench selecting app=web, each injecting its own env var, the
// first also a volume and its mount.
func benchPresets() []settingsv1alpha1.PodPreset {
	var out []settingsv1alpha1.PodPreset
	for i := range 5 {
		p := settingsv1alpha1.PodPreset{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("preset-%d", i), Namespace: "bench", ResourceVersion: "1"},
			Spec: settingsv1alpha1.PodPresetSpec{
				Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Env:      []corev1.EnvVar{{Name: fmt.Sprintf("PRESET_%d", i), Value: "yes"}},
			},
		}
		if i == 0 {
			p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			p.Spec.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
		}
		out = append(out, p)
	}
	return out
}

// hundredMutators are ten-pod-mutators.yaml's ten and 90 copies, in turn,
// of the four whose location names a key of its own (a label, an
// annotation, two env vars), copy k named <name>-k and writing key-k or
// KEY_k: test/bench/gatekeeper's hundred (its hundredMutators).
func hundredMutators(t testing.TB) []*mutation.Mutator {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "pkg", "admission", "locationmutator", "testdata", "ten-pod-mutators.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`metadata: \{name: ([-a-z]+)\}`)
	docs := map[string]string{}
	var out []*mutation.Mutator
	for _, doc := range strings.Split(string(data), "\n---\n") {
		m := name.FindStringSubmatch(doc)
		if m == nil {
			continue
		}
		docs[m[1]] = doc
		out = append(out, decodeMutator(t, doc))
	}
	keyed := []struct{ name, from, to string }{
		{"owner", "metadata.labels.owner", "metadata.labels.owner-%d"},
		{"mutated-by", "metadata.annotations.mutated-by", "metadata.annotations.mutated-by-%d"},
		{"env-cluster", "env[name: CLUSTER]", "env[name: CLUSTER_%d]"},
		{"env-namespace", "env[name: NAMESPACE]", "env[name: NAMESPACE_%d]"},
	}
	for j := range 100 - len(out) {
		kind, k := keyed[j%len(keyed)], j/len(keyed)+1
		doc, ok := docs[kind.name]
		if !ok || !strings.Contains(doc, kind.from) {
			t.Fatalf("ten-pod-mutators.yaml: no mutator %s writing %s", kind.name, kind.from)
		}
		doc = strings.Replace(doc, "{name: "+kind.name+"}", fmt.Sprintf("{name: %s-%d}", kind.name, k), 1)
		out = append(out, decodeMutator(t, strings.Replace(doc, kind.from, fmt.Sprintf(kind.to, k), 1)))
	}
	return out
}

func decodeMutator(t testing.TB, doc string) *mutation.Mutator {
	t.Helper()
	m, err := mutation.Decode([]byte(doc))
	if err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	return m
}

// TestCompiledCost reports what each policy kube-apiserver would run on a
// pod create costs on the reference pod, for the benchmark's five presets
// with the ten pod mutators and with a hundred, and checks that every
// policy Compile makes fits kube-apiserver's limits there, and that all
// compile: the hundred, which batch together, are more than one
// expression may cost, and the compiler cuts them into a few batches that
// fit (fitBatches) rather than refuse the mutators beyond the limit.
func TestCompiledCost(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  compiler.Sources
		// mutations bounds the mutators' policy's mutations.
		mutations [2]int
	}{
		{"5 presets, 10 mutators", compiler.Sources{Mutators: testdataMutators(t, "ten-pod-mutators.yaml"), PodPresets: benchPresets()}, [2]int{1, 1}},
		{"5 presets, 100 mutators", compiler.Sources{Mutators: hundredMutators(t), PodPresets: benchPresets()}, [2]int{2, 25}},
	} {
		r := compiler.Compile(tc.src)
		if len(r.Refused) > 0 {
			t.Errorf("%s: refused %v", tc.name, r.Refused)
		}
		for _, p := range r.MutatingPolicies {
			if n := len(p.Spec.Mutations); p.Name == compiler.MutatorsPolicyName && (n < tc.mutations[0] || n > tc.mutations[1]) {
				t.Errorf("%s: %d mutations, want %d to %d", tc.name, n, tc.mutations[0], tc.mutations[1])
			}
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %d compiled, %d not compiled\n", tc.name, len(r.Compiled), len(r.Refused))
		for _, f := range r.Refused {
			fmt.Fprintf(&b, "not compiled: %s: %v\n", f.Source, f.Errs.ToAggregate())
		}
		for _, p := range compiler.PolicyCosts(r, tc.src) {
			var costliest compiler.ExprCost
			for _, g := range p.Groups {
				if g.Err != nil {
					t.Errorf("%s: %s %s: %v", tc.name, p.Kind, p.Name, g.Err)
				}
				if g.Cost > costliest.Cost {
					costliest = g
				}
			}
			fmt.Fprintf(&b, "%s %s: %d groups; costliest %s: %d of its budget %d (per expression: %d)\n",
				p.Kind, p.Name, len(p.Groups), costliest.Path, costliest.Cost, costliest.Budget, celconfig.PerCallLimit)
		}
		t.Log(b.String())
	}
}

// manyPresets are n PodPresets of namespace team selecting app=web, each
// with three env vars of its own: enough of them pass the per-expression
// limit on the reference pod.
func manyPresets(n int) []settingsv1alpha1.PodPreset {
	var out []settingsv1alpha1.PodPreset
	for i := range n {
		p := settingsv1alpha1.PodPreset{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("preset-%02d", i), Namespace: "team", ResourceVersion: "1"},
			Spec:       settingsv1alpha1.PodPresetSpec{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		}
		for j := range 3 {
			p.Spec.Env = append(p.Spec.Env, corev1.EnvVar{Name: fmt.Sprintf("PRESET_%d_%d", i, j), Value: "yes"})
		}
		out = append(out, p)
	}
	return out
}

// mergeArgs is a ModifySet that merges n values into every container's
// args: its mutation walks each container's args once per value.
func mergeArgs(t *testing.T, n int) *mutation.Mutator {
	t.Helper()
	values := make([]string, n)
	for i := range values {
		values[i] = fmt.Sprintf("--old-flag-%d", i)
	}
	return decodeMutator(t, fmt.Sprintf(`apiVersion: mutations.gatekeeper.sh/v1
kind: ModifySet
metadata: {name: merge-args}
spec:
  applyTo: [{groups: [""], versions: [v1], kinds: [Pod]}]
  location: 'spec.containers[name:*].args'
  parameters: {values: {fromList: [%s]}}
`, strings.Join(values, ", ")))
}

// TestCostBoundRefuses: a set whose policy passes kube-apiserver's limits
// on the reference pod is refused, by the field of the policy, with its
// cost and the limit; a smaller one compiles; and what the bound lets
// through kube-apiserver's own policy plugins admit on the reference pod
// (compilertest), while what it refuses they would cut there, refusing a
// pod the plugins admit.
func TestCostBoundRefuses(t *testing.T) {
	// The ten pod mutators but the one that prunes args, which would
	// fight the one that merges them.
	nine := slices.DeleteFunc(testdataMutators(t, "ten-pod-mutators.yaml"), func(m *mutation.Mutator) bool { return m.ID().Name == "no-alsologtostderr" })
	for _, tc := range []struct {
		name string
		src  compiler.Sources
		// refused is the source that passes the limit, with the field
		// of the policy that does, and the others refused with it.
		refused string
		field   string
		others  []string
	}{
		{name: "a few presets", src: compiler.Sources{PodPresets: manyPresets(4)}},
		{name: "many presets", src: compiler.Sources{PodPresets: manyPresets(12)},
			refused: "PodPreset team/preset-", field: ": spec.", others: []string{"PodPreset team/preset-00"}},
		{name: "merging a few args, beside the other mutators", src: compiler.Sources{Mutators: append(slices.Clone(nine), mergeArgs(t, 10))}},
		{name: "merging many args, beside the other mutators", src: compiler.Sources{Mutators: append(slices.Clone(nine), mergeArgs(t, 1500))},
			refused: "ModifySet merge-args", field: "spec.mutations["},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := compiler.Compile(tc.src)
			unbounded := compiler.CompileUnbounded(tc.src)
			for _, p := range compiler.PolicyCosts(r, tc.src) {
				if err := firstOver(p); err != nil {
					t.Errorf("%s %s passes the limits: %v", p.Kind, p.Name, err)
				}
			}
			var overRefused bool
			for _, f := range r.Refused {
				msg := f.Errs.ToAggregate().Error()
				switch {
				case tc.refused != "" && strings.HasPrefix(f.Source.String(), tc.refused) && strings.Contains(msg, "over the limit of 1000000"):
					overRefused = true
					if !strings.Contains(msg, tc.field) || !regexp.MustCompile(`costs [0-9]{7,} on the reference pod`).MatchString(msg) {
						t.Errorf("%s: refusal names neither the field %s nor a cost: %s", f.Source, tc.field, msg)
					}
				case tc.refused == "":
					t.Errorf("%s not compiled: %s", f.Source, msg)
				}
			}
			if tc.refused == "" {
				if len(r.Compiled) != len(unbounded.Compiled) {
					t.Errorf("compiled %d of %d", len(r.Compiled), len(unbounded.Compiled))
				}
			} else if !overRefused {
				t.Errorf("no %s refused for its cost; refused %v", tc.refused, r.Refused)
			}
			for _, want := range tc.others {
				if !slices.ContainsFunc(r.Refused, func(f compiler.Refusal) bool { return f.Source.String() == want }) {
					t.Errorf("%s compiled, beside a preset refused for its cost", want)
				}
			}
			if tc.refused != "" && len(tc.src.Mutators) > 1 && len(r.Compiled) == 0 {
				t.Errorf("every mutator refused with %s: %v", tc.refused, r.Refused)
			}

			pod, ns := compiler.Reference(tc.src)
			if err := admitReference(r, pod, ns); err != nil {
				t.Errorf("the policies Compile made refuse the reference pod: %v", err)
			}
			err := admitReference(unbounded, pod, ns)
			switch {
			case tc.refused == "" && err != nil:
				t.Errorf("the policies refuse the reference pod: %v", err)
			case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), "cost")):
				t.Errorf("the policies the bound refused admit the reference pod, or refuse it for something else than its cost: %v", err)
			}
		})
	}
}

// firstOver is the first of p's groups kube-apiserver would refuse a
// request for, or nil.
func firstOver(p compiler.PolicyCost) *field.Error {
	for _, g := range p.Groups {
		if g.Err != nil {
			return g.Err
		}
	}
	return nil
}

// admitReference creates pod in ns through r's policies, with
// k8s.io/apiserver's own policy plugins.
func admitReference(r compiler.Result, pod *corev1.Pod, ns *corev1.Namespace) error {
	runner, err := compilertest.New(r, ns)
	if err != nil {
		return err
	}
	defer runner.Close()
	// The plugins compile the policies once they see them; until then
	// (seconds, for large ones) they refuse as not ready.
	for range 60 {
		_, _, _, err = runner.Admit(context.Background(), pod, admission.Create, ns.Name)
		if err == nil || !strings.Contains(err.Error(), "not yet ready") {
			return err
		}
	}
	return err
}

// BenchmarkCompileCost is what the CEL bound adds to Compile, for the
// benchmark's five presets and ten mutators and for a hundred mutators:
// Compile without the bound (the baseline), with it measuring every
// policy (cold), and with what the policies cost already known (the live
// mode compiling the same objects again).
func BenchmarkCompileCost(b *testing.B) {
	for _, set := range []struct {
		name string
		src  compiler.Sources
	}{
		{"5 presets, 10 mutators", compiler.Sources{Mutators: testdataMutators(b, "ten-pod-mutators.yaml"), PodPresets: benchPresets()}},
		{"5 presets, 100 mutators", compiler.Sources{Mutators: hundredMutators(b), PodPresets: benchPresets()}},
	} {
		b.Run(set.name+"/unbounded", func(b *testing.B) {
			for b.Loop() {
				compiler.CompileUnbounded(set.src)
			}
		})
		b.Run(set.name+"/cold", func(b *testing.B) {
			for b.Loop() {
				compiler.ForgetCosts()
				compiler.Compile(set.src)
			}
		})
		b.Run(set.name+"/known", func(b *testing.B) {
			compiler.Compile(set.src)
			for b.Loop() {
				compiler.Compile(set.src)
			}
		})
	}
}
