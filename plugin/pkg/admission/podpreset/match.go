package podpreset

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// selectorMatches reports whether a label selector selects labels. It gives
// the answer metav1.LabelSelectorAsSelector(s).Matches(labels) gives, without
// building a selector: the plugin asks it of every preset in a namespace on
// every pod create, and most presets match nothing.
//
// Validation has already refused malformed selectors; one that slips
// through (a preset stored before validation existed) is an error rather
// than a silent match or miss.
func selectorMatches(s *metav1.LabelSelector, labels map[string]string) (bool, error) {
	for key, value := range s.MatchLabels {
		if got, ok := labels[key]; !ok || got != value {
			return false, nil
		}
	}
	for i := range s.MatchExpressions {
		req := &s.MatchExpressions[i]
		value, present := labels[req.Key]
		switch req.Operator {
		case metav1.LabelSelectorOpIn:
			if len(req.Values) == 0 {
				return false, fmt.Errorf("values: must be non-empty for operator %q on key %q", req.Operator, req.Key)
			}
			if !present || !slices.Contains(req.Values, value) {
				return false, nil
			}
		case metav1.LabelSelectorOpNotIn:
			if len(req.Values) == 0 {
				return false, fmt.Errorf("values: must be non-empty for operator %q on key %q", req.Operator, req.Key)
			}
			if present && slices.Contains(req.Values, value) {
				return false, nil
			}
		case metav1.LabelSelectorOpExists:
			if !present {
				return false, nil
			}
		case metav1.LabelSelectorOpDoesNotExist:
			if present {
				return false, nil
			}
		default:
			return false, fmt.Errorf("%q is not a valid label selector operator", req.Operator)
		}
	}
	return true, nil
}
