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
	"math/rand"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestSelectorMatches(t *testing.T) {
	pod := map[string]string{"app": "web", "tier": "frontend"}
	cases := []struct {
		name     string
		selector metav1.LabelSelector
		want     bool
		wantErr  bool
	}{
		{name: "empty selects everything", want: true},
		{name: "matchLabels equal", selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, want: true},
		{name: "matchLabels differ", selector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		{name: "matchLabels missing", selector: metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}},
		{name: "In", selector: expr("tier", metav1.LabelSelectorOpIn, "backend", "frontend"), want: true},
		{name: "In missing key", selector: expr("zone", metav1.LabelSelectorOpIn, "a")},
		{name: "NotIn", selector: expr("tier", metav1.LabelSelectorOpNotIn, "backend"), want: true},
		{name: "NotIn hit", selector: expr("tier", metav1.LabelSelectorOpNotIn, "frontend")},
		{name: "NotIn missing key", selector: expr("zone", metav1.LabelSelectorOpNotIn, "a"), want: true},
		{name: "Exists", selector: expr("app", metav1.LabelSelectorOpExists), want: true},
		{name: "Exists missing", selector: expr("zone", metav1.LabelSelectorOpExists)},
		{name: "DoesNotExist", selector: expr("zone", metav1.LabelSelectorOpDoesNotExist), want: true},
		{name: "DoesNotExist present", selector: expr("app", metav1.LabelSelectorOpDoesNotExist)},
		{name: "labels and expressions are ANDed", selector: metav1.LabelSelector{
			MatchLabels:      map[string]string{"app": "web"},
			MatchExpressions: expr("tier", metav1.LabelSelectorOpIn, "backend").MatchExpressions,
		}},
		{name: "unknown operator", selector: expr("app", "Near", "web"), wantErr: true},
		{name: "In without values", selector: expr("app", metav1.LabelSelectorOpIn), wantErr: true},
		{name: "Exists with values", selector: expr("app", metav1.LabelSelectorOpExists, "web"), wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			compiled, err := compilePresetSelector(&tc.selector)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if got := compiled.matches(pod); got != tc.want {
				t.Errorf("matches = %v, want %v", got, tc.want)
			}
		})
	}
}

// The shortcut must agree with apimachinery's selector on every valid
// selector; random selectors over a small alphabet make collisions likely.
func TestSelectorMatchesAgreesWithApimachinery(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	keys, values := []string{"a", "b", "c"}, []string{"x", "y"}
	ops := []metav1.LabelSelectorOperator{metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist}
	pick := func(from []string) string { return from[rng.Intn(len(from))] }
	for i := 0; i < 5000; i++ {
		podLabels := map[string]string{}
		for _, k := range keys {
			if rng.Intn(2) == 0 {
				podLabels[k] = pick(values)
			}
		}
		var s metav1.LabelSelector
		if rng.Intn(2) == 0 {
			s.MatchLabels = map[string]string{pick(keys): pick(values)}
		}
		for n := rng.Intn(3); n > 0; n-- {
			op := ops[rng.Intn(len(ops))]
			req := metav1.LabelSelectorRequirement{Key: pick(keys), Operator: op}
			if op == metav1.LabelSelectorOpIn || op == metav1.LabelSelectorOpNotIn {
				req.Values = []string{pick(values)}
			}
			s.MatchExpressions = append(s.MatchExpressions, req)
		}
		want, err := metav1.LabelSelectorAsSelector(&s)
		if err != nil {
			t.Fatal(err)
		}
		compiled, err := compilePresetSelector(&s)
		if err != nil {
			t.Fatal(err)
		}
		if got := compiled.matches(podLabels); got != want.Matches(labels.Set(podLabels)) {
			t.Fatalf("selector %v on %v: got %v, apimachinery says %v", s, podLabels, got, !got)
		}
	}
}

func expr(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: key, Operator: op, Values: values}}}
}
