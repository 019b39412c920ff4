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
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apiserver/pkg/admission"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin/internal/trialreport"
)

// UnenforcedAnnotationKey is the audit annotation that records, for every
// preset in Warn or Audit mode that selects a pod, what enforcing it would
// have done to the pod.
const UnenforcedAnnotationKey = "podpreset.admission.admitkit.io/unenforced-presets"

// maxWarningChanges bounds the changes one warning lists (trialreport
// bounds the warnings): the audit annotation has every preset and every change.
const maxWarningChanges = 8

// mode is the preset's spec.mode, with unset meaning Enforce.
func (p *preset) mode() settingsv1alpha1.Mode {
	if p.spec.Mode == "" {
		return settingsv1alpha1.ModeEnforce
	}
	return p.spec.Mode
}

// enforced returns the presets that change the pod, presets itself when
// every one does.
func enforced(presets []*preset) []*preset {
	return keeping(presets, func(p *preset) bool { return p.mode() == settingsv1alpha1.ModeEnforce })
}

// unenforced is what enforcing one preset in Warn or Audit mode would have
// done to a pod, next to what the enforced presets did.
type unenforced struct {
	preset *preset
	// changes are the items the preset would have added or replaced.
	changes []string
	// err is the conflict enforcing the preset would have caused: a
	// *refusal when it would have refused the pod, otherwise one that
	// would have left every preset out.
	err error
}

// tryUnenforced works out, for each preset of presets in Warn or Audit
// mode, what the pod would be had the preset been enforced together with
// the enforced ones, and compares it with admitted: the pod the enforced
// presets gave (or before itself, when their conflict left them out, in
// which case enforcedErr is that conflict). before is the pod as it came
// in; it is not changed. Presets that would change nothing are left out.
func tryUnenforced(before, admitted *corev1.Pod, presets []*preset, enforcedErr error) []unenforced {
	var out []unenforced
	for _, candidate := range presets {
		if candidate.mode() == settingsv1alpha1.ModeEnforce {
			continue
		}
		together := keeping(presets, func(p *preset) bool { return p == candidate || p.mode() == settingsv1alpha1.ModeEnforce })
		trial := before.DeepCopy()
		if err := applyPresets(trial, together); err != nil {
			// The enforced presets' own conflict fails every trial the
			// same way: that is not the candidate's doing.
			if enforcedErr == nil || err.Error() != enforcedErr.Error() {
				out = append(out, unenforced{preset: candidate, err: err})
			}
			continue
		}
		if changes := podChanges(admitted, trial); len(changes) > 0 {
			out = append(out, unenforced{preset: candidate, changes: changes})
		}
	}
	return out
}

// describe says what enforcing the preset would do, with at most limit of
// its changes (all of them when limit is 0).
func (u unenforced) describe(limit int) string {
	switch {
	case u.err != nil && errors.As(u.err, new(*refusal)):
		return fmt.Sprintf("would refuse the pod: %v", u.err)
	case u.err != nil:
		return fmt.Sprintf("would leave every preset out of the pod, conflicting: %v", u.err)
	}
	shown := u.changes
	if limit > 0 && len(shown) > limit {
		shown = shown[:limit]
	}
	s := "would set " + strings.Join(shown, ", ")
	if hidden := len(u.changes) - len(shown); hidden > 0 {
		s += fmt.Sprintf(" and %d more", hidden)
	}
	return s
}

// podChanges lists, in the order of the pod's spec, the items of the
// lists presets merge into that want has and have lacks or holds with
// another value.
func podChanges(have, want *corev1.Pod) []string {
	changes := listChanges(nil, have.Spec.Volumes, want.Spec.Volumes, volumeKey, owner{})
	for i := range want.Spec.InitContainers {
		changes = containerChanges(changes, &have.Spec.InitContainers[i], &want.Spec.InitContainers[i], "init container")
	}
	for i := range want.Spec.Containers {
		changes = containerChanges(changes, &have.Spec.Containers[i], &want.Spec.Containers[i], "container")
	}
	return changes
}

func containerChanges(changes []string, have, want *corev1.Container, kind string) []string {
	o := owner{kind: kind, name: want.Name}
	changes = listChanges(changes, have.Env, want.Env, envKey, o)
	changes = listChanges(changes, have.EnvFrom, want.EnvFrom, envFromKey, o)
	return listChanges(changes, have.VolumeMounts, want.VolumeMounts, mountPathKey, o)
}

func listChanges[T any](changes []string, have, want []T, key listKey[T], o owner) []string {
	if len(want) == 0 {
		return changes
	}
	at := make(map[itemKey]int, len(have))
	for i := range have {
		addIfAbsent(at, key.of(&have[i]), i)
	}
	for i := range want {
		if j, ok := at[key.of(&want[i])]; ok && apiequality.Semantic.DeepEqual(have[j], want[i]) {
			continue
		}
		change := key.describe(&want[i])
		if o.kind != "" {
			change += " in " + o.String()
		}
		changes = append(changes, change)
	}
	return changes
}

// unenforcedReports writes the trials of presets in Warn or Audit mode.
var unenforcedReports = trialreport.Reporter{
	AnnotationKey: UnenforcedAnnotationKey,
	Counter:       unenforcedChanges,
	Mutations:     "presets",
	LogMessage:    "Pod presets in Warn or Audit mode would change a pod",
}

// reportUnenforced tells what the presets in Warn or Audit mode would have
// done to the pod name names.
func reportUnenforced(ctx context.Context, a admission.Attributes, name string, outcomes []unenforced) {
	trials := make([]trialreport.Trial, len(outcomes))
	for i, u := range outcomes {
		trials[i] = trialreport.Trial{
			Name:   u.preset.String(),
			Mode:   string(u.preset.mode()),
			Effect: u.describe(0),
			Warning: func() string {
				return fmt.Sprintf("%s is in Warn mode; enforced, it %s in %s", u.preset, u.describe(maxWarningChanges), name)
			},
		}
	}
	unenforcedReports.Report(ctx, a, name, trials)
}
