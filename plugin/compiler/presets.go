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

package compiler

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

const (
	podPresetKind        = "PodPreset"
	clusterPodPresetKind = "ClusterPodPreset"
	// presetPolicyName names the one MutatingAdmissionPolicy (and the one
	// ValidatingAdmissionPolicy) every compiled preset goes into: the
	// plugin applies a pod's presets together, in order, all or none, and
	// kube-apiserver runs separate policies in no set order.
	presetPolicyName = "admitkit-podpresets"
)

// presetDefaults holds the settings.k8s.io/v1alpha1 defaulters, which the
// plugin runs on every preset before it compares its items with the pod's.
var presetDefaults = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(settingsv1alpha1.AddToScheme(s))
	return s
}()

// presetIn is one PodPreset or ClusterPodPreset, defaulted as the plugin
// defaults it.
type presetIn struct {
	src             Source
	resourceVersion string
	spec            settingsv1alpha1.PodPresetSpec
	// namespaceSelector is nil for a PodPreset.
	namespaceSelector *metav1.LabelSelector
}

func (p *presetIn) cluster() bool { return p.namespaceSelector != nil }

// String names the preset as the plugin does in its messages.
func (p *presetIn) String() string { return fmt.Sprintf("%s %q", p.src.Kind, p.src.Name) }

// annotationKey is the pod annotation the plugin records the preset in.
func (p *presetIn) annotationKey() string {
	if p.cluster() {
		return "podpreset.admission.kubernetes.io/clusterpodpreset-" + p.src.Name
	}
	return "podpreset.admission.kubernetes.io/podpreset-" + p.src.Name
}

func (p *presetIn) enforced() bool {
	return p.spec.Mode == "" || p.spec.Mode == settingsv1alpha1.ModeEnforce
}

func (p *presetIn) rejects() bool {
	return p.spec.ConflictPolicy == settingsv1alpha1.ConflictPolicyReject
}

// enforces is true of a PresetWins preset, whose items take the place of
// the pod's.
func (p *presetIn) enforces() bool {
	return p.spec.ConflictPolicy == settingsv1alpha1.ConflictPolicyPresetWins
}

// yields is true of a PodWins preset, whose items give way to any item
// with a key of theirs.
func (p *presetIn) yields() bool {
	return p.spec.ConflictPolicy == settingsv1alpha1.ConflictPolicyPodWins
}

// compilePresets compiles src's PodPresets and ClusterPodPresets into r:
// one MutatingAdmissionPolicy that applies the enforced ones as the plugin
// does; when a compiled preset's conflictPolicy is Reject, one
// ValidatingAdmissionPolicy that refuses the pods it refuses; and when a
// compiled preset is in Warn or Audit mode, one that reports what it
// would do (see buildTrials). A preset that cannot be compiled exactly is
// refused, and so is every preset that can apply to the same pod as a
// refused one: the plugin applies a pod's presets all or none, and tries
// those in Warn or Audit mode together with the enforced ones, which a
// split between the policies and the plugin could not keep.
//
// The policies give the pod the webhook host gives, which differs from
// the plugin inside kube-apiserver in the same ways: both run after
// ServiceAccount admission, so the kube-api-access volume comes before
// the presets' volumes, and a preset mounting at its path conflicts with
// its mount. Beyond the webhook host's differences: the refusal and the
// warning carry kube-apiserver's prefix naming the policy and binding
// before the plugin's text; no PodPresetConflict Event and no plugin
// metrics are written (a policy cannot); and the refusal and the warning
// are decided on the pod as mutation left it, so a mutating webhook that
// changes a preset's item after the policy ran changes them.
func compilePresets(src Sources, r *Result) {
	presets, refused := collectPresets(src)
	var enforced []*presetIn
	// own holds each preset's own reasons not to compile.
	own := map[*presetIn]field.ErrorList{}
	for _, p := range presets {
		if errs := presetRefusal(p); len(errs) > 0 {
			own[p] = errs
		}
		own[p] = append(own[p], src.overBudget[p.src]...)
		if p.enforced() {
			enforced = append(enforced, p)
		}
	}
	for p, errs := range rejectRefusals(enforced) {
		own[p] = append(own[p], errs...)
	}
	for _, p := range presets {
		if !p.enforced() {
			own[p] = append(own[p], trialRefusal(p, presets)...)
		}
	}
	var policy presetPolicy
	var compiled []*presetIn
	var kept []Refusal
	for {
		compiled, kept = keepApart(presets, own, refused)
		if len(compiled) == 0 {
			r.Refused = append(r.Refused, kept...)
			return
		}
		var tooLong map[*presetIn][]*field.Path
		if policy, tooLong = buildPresetPolicy(compiled); len(tooLong) == 0 {
			break
		}
		// Each round refuses at least one more preset: it ends.
		for p, paths := range tooLong {
			for _, path := range paths {
				own[p] = append(own[p], field.Forbidden(path, fmt.Sprintf(
					"a PodWins mount whose name or path too many other PodWins mounts share, in chains: its condition would pass %d bytes", maxCondition)))
			}
		}
	}
	r.Refused = append(r.Refused, kept...)
	if policy.mutating != nil {
		r.MutatingPolicies = append(r.MutatingPolicies, *policy.mutating)
		r.MutatingBindings = append(r.MutatingBindings, *policy.mutatingBinding)
		if policy.validating != nil {
			r.ValidatingPolicies = append(r.ValidatingPolicies, *policy.validating)
			r.ValidatingBindings = append(r.ValidatingBindings, *policy.validatingBinding)
		}
		r.ValidatingPolicies = append(r.ValidatingPolicies, *policy.warning)
		r.ValidatingBindings = append(r.ValidatingBindings, *policy.warningBinding)
	}
	if policy.trials != nil {
		r.ValidatingPolicies = append(r.ValidatingPolicies, *policy.trials)
		r.ValidatingBindings = append(r.ValidatingBindings, *policy.trialsBinding)
	}
	for _, p := range compiled {
		r.Compiled = append(r.Compiled, p.src)
	}
}

// collectPresets returns the presets in the plugin's order (PodPresets by
// name, then ClusterPodPresets by name; PodPresets of different namespaces
// never meet), defaulted. Of two with the same kind, namespace and name the
// later is kept, as the API would after an update; the earlier is refused.
func collectPresets(src Sources) ([]*presetIn, []Refusal) {
	var presets []*presetIn
	byKey := map[Source]int{}
	var refused []Refusal
	add := func(p *presetIn) {
		if i, ok := byKey[p.src]; ok {
			refused = append(refused, Refusal{presets[i].src, field.ErrorList{field.Duplicate(field.NewPath("metadata", "name"), p.src.Name)}})
			presets[i] = p
			return
		}
		byKey[p.src] = len(presets)
		presets = append(presets, p)
	}
	for i := range src.PodPresets {
		pp := &src.PodPresets[i]
		defaulted := &settingsv1alpha1.PodPreset{Spec: *pp.Spec.DeepCopy()}
		presetDefaults.Default(defaulted)
		add(&presetIn{src: Source{podPresetKind, pp.Namespace, pp.Name}, resourceVersion: pp.ResourceVersion, spec: defaulted.Spec})
	}
	for i := range src.ClusterPodPresets {
		cp := &src.ClusterPodPresets[i]
		defaulted := &settingsv1alpha1.ClusterPodPreset{Spec: *cp.Spec.DeepCopy()}
		presetDefaults.Default(defaulted)
		add(&presetIn{src: Source{clusterPodPresetKind, "", cp.Name}, resourceVersion: cp.ResourceVersion,
			spec: defaulted.Spec.PodPresetSpec, namespaceSelector: &defaulted.Spec.NamespaceSelector})
	}
	slices.SortStableFunc(presets, func(a, b *presetIn) int {
		if a.cluster() != b.cluster() {
			if a.cluster() {
				return 1
			}
			return -1
		}
		return strings.Compare(a.src.Name, b.src.Name)
	})
	return presets, refused
}

// presetRefusal is why a preset cannot be compiled on its own.
func presetRefusal(p *presetIn) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if p.enforces() && len(p.spec.VolumeMounts) > 0 {
		// A PresetWins mount takes the place of the pod's first mount
		// with its name or its path and drops the others, which two keys
		// make a chain of conditions the compiler does not build.
		errs = append(errs, field.Forbidden(spec.Child("volumeMounts"), "volumeMounts of a PresetWins preset are not compiled"))
	}
	if _, err := celSelector(&p.spec.Selector, "variables.labels"); err != nil {
		errs = append(errs, field.Invalid(spec.Child("selector"), p.spec.Selector, err.Error()))
	}
	if p.cluster() {
		if _, err := celSelector(p.namespaceSelector, "variables.namespaceLabels"); err != nil {
			errs = append(errs, field.Invalid(spec.Child("namespaceSelector"), *p.namespaceSelector, err.Error()))
		}
	}
	for _, f := range familiesOf(p, 0) {
		for _, e := range f.entries {
			errs = append(errs, e.refusal...)
		}
	}
	return errs
}

// rejectRefusals refuses each Reject preset that shares an item's key with
// another item it can meet on a pod: its own, or another enforced preset's
// that can apply to the same pods and is not PodWins. Whether a conflict between two presets
// refuses the pod, and how the refusal names it, depends on which item the
// plugin merged first, which the compiled policy does not follow; a Reject
// preset whose keys are its own conflicts only with the pod.
func rejectRefusals(enforced []*presetIn) map[*presetIn]field.ErrorList {
	out := map[*presetIn]field.ErrorList{}
	for pi, p := range enforced {
		if !p.rejects() {
			continue
		}
		for _, f := range familiesOf(p, pi) {
			for i, e := range f.entries {
				for _, other := range f.entries[:i] {
					if shared := e.sharedKey(&other); shared >= 0 {
						out[p] = append(out[p], field.Forbidden(e.path, fmt.Sprintf(
							"%s is also the %s of %s, and the conflictPolicy is Reject: not compiled", f.keyNames[shared], f.keyNames[shared], other.path)))
					}
				}
			}
		}
		for qi, q := range enforced {
			// A PodWins item is merged after every other and gives way:
			// a Reject item never meets it.
			if q == p || q.yields() || !meet(p, q) {
				continue
			}
			theirs := familiesOf(q, qi)
			for fi, f := range familiesOf(p, pi) {
				for _, e := range f.entries {
					for _, other := range theirs[fi].entries {
						if shared := e.sharedKey(&other); shared >= 0 {
							out[p] = append(out[p], field.Forbidden(e.path, fmt.Sprintf(
								"%s is also the %s of %s's %s, and the conflictPolicy is Reject: not compiled", f.keyNames[shared], f.keyNames[shared], q, other.path)))
						}
					}
				}
			}
		}
	}
	return out
}

// meet is true of two presets that can select the same pod.
func meet(a, b *presetIn) bool {
	return a.cluster() || b.cluster() || a.src.Namespace == b.src.Namespace
}

// keepApart compiles the presets that can, and refuses, beside those with
// reasons of their own, every preset that can apply to a pod together with
// a refused one.
func keepApart(presets []*presetIn, own map[*presetIn]field.ErrorList, refused []Refusal) ([]*presetIn, []Refusal) {
	blocker := map[*presetIn]*presetIn{}
	for _, p := range presets {
		if len(own[p]) > 0 {
			blocker[p] = p
		}
	}
	// A refused ClusterPodPreset meets every preset, a refused PodPreset
	// every preset of its namespace and every ClusterPodPreset, whose
	// refusal then reaches further: repeat until nothing changes.
	for changed := true; changed; {
		changed = false
		for _, p := range presets {
			if blocker[p] != nil {
				continue
			}
			for _, q := range presets {
				if b := blocker[q]; b != nil && meet(p, q) {
					blocker[p] = b
					changed = true
					break
				}
			}
		}
	}
	var compiled []*presetIn
	for _, p := range presets {
		switch b := blocker[p]; {
		case b == nil:
			compiled = append(compiled, p)
		case b == p:
			refused = append(refused, Refusal{p.src, own[p]})
		default:
			refused = append(refused, Refusal{p.src, field.ErrorList{field.Forbidden(field.NewPath("spec"), fmt.Sprintf(
				"can apply to the same pods as %s, which is not compiled: the plugin applies a pod's presets all or none, and tries those in Warn or Audit mode with them", describeSource(b.src)))}})
		}
	}
	return compiled, refused
}

func describeSource(s Source) string {
	if s.Namespace == "" {
		return s.Kind + " " + s.Name
	}
	return s.Kind + " " + s.Namespace + "/" + s.Name
}
