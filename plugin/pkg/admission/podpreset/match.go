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
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// selector is a label selector compiled once, when its preset enters the
// cache, so that matching it against a pod allocates nothing and walks no
// map of the selector's.
type selector struct {
	labels []labelPair // matchLabels, sorted by key
	exprs  []metav1.LabelSelectorRequirement
}

type labelPair struct{ key, value string }

// compilePresetSelector gives the selector metav1.LabelSelectorAsSelector
// would build, refusing what it refuses. It is kept apart from the
// LocationMutator's labels.Selector (package match) on purpose: it runs
// for every preset on every pod create and matches without allocating,
// which labels.Selector does not. Validation has already refused malformed
// selectors when the preset was written; one that slips through (a preset
// stored before validation existed) must fail loudly, never silently match
// or miss.
func compilePresetSelector(s *metav1.LabelSelector) (selector, error) {
	var c selector
	for key, value := range s.MatchLabels {
		c.labels = append(c.labels, labelPair{key, value})
	}
	slices.SortFunc(c.labels, func(a, b labelPair) int { return strings.Compare(a.key, b.key) })
	for _, req := range s.MatchExpressions {
		switch req.Operator {
		case metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn:
			if len(req.Values) == 0 {
				return selector{}, fmt.Errorf("values: must be non-empty for operator %q on key %q", req.Operator, req.Key)
			}
		case metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist:
			if len(req.Values) != 0 {
				return selector{}, fmt.Errorf("values: must be empty for operator %q on key %q", req.Operator, req.Key)
			}
		default:
			return selector{}, fmt.Errorf("%q is not a valid label selector operator", req.Operator)
		}
		c.exprs = append(c.exprs, *req.DeepCopy())
	}
	return c, nil
}

// selectsEverything is true of the empty selector.
func (s *selector) selectsEverything() bool { return len(s.labels) == 0 && len(s.exprs) == 0 }

// matches reports whether the selector selects a set of labels.
func (s *selector) matches(labels map[string]string) bool {
	for _, pair := range s.labels {
		if got, ok := labels[pair.key]; !ok || got != pair.value {
			return false
		}
	}
	for i := range s.exprs {
		req := &s.exprs[i]
		value, present := labels[req.Key]
		switch req.Operator {
		case metav1.LabelSelectorOpIn:
			if !present || !slices.Contains(req.Values, value) {
				return false
			}
		case metav1.LabelSelectorOpNotIn:
			if present && slices.Contains(req.Values, value) {
				return false
			}
		case metav1.LabelSelectorOpExists:
			if !present {
				return false
			}
		case metav1.LabelSelectorOpDoesNotExist:
			if present {
				return false
			}
		}
	}
	return true
}
