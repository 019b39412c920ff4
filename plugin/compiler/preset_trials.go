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
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin/internal/warnlimit"
	"github.com/admitkit/admitkit/plugin/pkg/admission/podpreset"
)

// The policy that reports the trials of the presets in Warn or Audit mode
// is named after the prefix of the plugin's audit annotation, and its one
// audit annotation after the rest: kube-apiserver writes a policy's audit
// annotation as "<policy name>/<key>", which is then the plugin's key.
var presetTrialsPolicyName, presetTrialsAnnotation, _ = strings.Cut(podpreset.UnenforcedAnnotationKey, "/")

// maxTrialChanges is the plugin's bound on the changes one warning lists.
const maxTrialChanges = 8

// trialRefusal is why preset c, in Warn or Audit mode, cannot be tried by
// a policy. The plugin tries c on the pod as it came, together with the
// enforced presets; a policy sees the pod after the enforced presets'
// policy, and so tries c on that pod. The two agree when c's items never
// meet the enforced presets' items but as a PodWins item giving way to
// them; otherwise the policy could not tell the enforced presets' items
// from the pod's own, which the plugin's messages tell apart. presets
// are every preset, in the plugin's order.
func trialRefusal(c *presetIn, presets []*presetIn) field.ErrorList {
	// A Reject preset with two items of one key conflicts with itself in
	// an order the policies do not follow (see rejectRefusals).
	errs := rejectRefusals([]*presetIn{c})[c]
	ci := slices.Index(presets, c)
	mine := familiesOf(c, ci)
	for qi, q := range presets {
		if q == c || !q.enforced() || !meet(c, q) {
			continue
		}
		// A PodWins item gives way to any item with a key of its, whether
		// the enforced preset or the pod put it there; between two
		// PodWins items, the earlier one stays.
		if c.yields() && (!q.yields() || qi < ci) {
			continue
		}
		theirs := familiesOf(q, qi)
		for fi, f := range mine {
			for _, e := range f.entries {
				for _, other := range theirs[fi].entries {
					if shared := e.sharedKey(&other); shared >= 0 {
						errs = append(errs, field.Forbidden(e.path, fmt.Sprintf(
							"%s is also the %s of %s's %s, which is enforced: a policy tries this preset on the pod the enforced presets made, where their items cannot be told from the pod's: not compiled",
							f.keyNames[shared], f.keyNames[shared], q, other.path)))
					}
				}
			}
		}
	}
	return errs
}

// buildTrials makes the policy that reports, as the plugin does, what each
// compiled preset in Warn or Audit mode would do to a pod it selects if it
// were enforced: the conflict it would cause, or the items it would set,
// in the UnenforcedAnnotationKey audit annotation and, for a preset in
// Warn mode, in a warning. compiled are the compiled presets in the
// plugin's order, names their match variables, enforced the builder of
// the enforced ones' policies (nil when none is compiled). Items whose
// condition grows too long are added to tooLong.
//
// Each trial is worked out on the pod the enforced presets' policy left:
// the pod as it came when their conflict left them out, which the plugin
// tries the preset on; otherwise the pod with their items, which
// trialRefusal makes the same to the preset's items. The policy's
// failurePolicy is Ignore: a preset in Warn or Audit mode never decides
// whether a pod is admitted.
func buildTrials(compiled []*presetIn, names []string, enforced *presetCEL, tooLong map[*presetIn][]*field.Path) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	vars := presetMatchVariables(compiled, names)
	enforcedRejections, enforcedConflicts := "[]", "[]"
	if enforced != nil {
		enforcedRejections, enforcedConflicts = enforced.messages()
	}
	vars = append(vars,
		admissionregistrationv1.Variable{Name: "rejections", Expression: enforcedRejections},
		admissionregistrationv1.Variable{Name: "conflicts", Expression: enforcedConflicts})
	var entries, warnings []string
	warners := 0
	for ci, c := range compiled {
		if c.enforced() {
			continue
		}
		// The plugin's trial: the enforced presets and c, in order.
		var set []*presetIn
		var setVars []string
		at := 0
		for pi, p := range compiled {
			if p == c || p.enforced() {
				if p == c {
					at = len(set)
				}
				set, setVars = append(set, p), append(setVars, "variables."+names[pi])
			}
		}
		t := newPresetCEL(set, setVars)
		rejections, conflicts := t.messages()
		changes := t.changes(at)
		for p, paths := range t.tooLong {
			for _, path := range paths {
				if !slices.ContainsFunc(tooLong[p], func(have *field.Path) bool { return have.String() == path.String() }) {
					tooLong[p] = append(tooLong[p], path)
				}
			}
		}
		n := strconv.Itoa(ci)
		v := func(name string) string { return "variables." + name + n }
		// The plugin's rule: a trial that fails as the enforced presets
		// failed is not the preset's doing, and says nothing.
		trialErr := fmt.Sprintf(`size(%[1]s) > 0 ? %[2]s : (size(%[3]s) > 0 ? %[4]s : "")`,
			v("rejections"), aggregateCEL(v("rejections")), v("conflicts"), aggregateCEL(v("conflicts")))
		effect := fmt.Sprintf(`!variables.%[1]s ? "" : (%[2]s != "" ? ((size(variables.conflicts) > 0 && %[2]s == %[3]s) ? "" : `+
			`(size(%[4]s) > 0 ? "would refuse the pod: " : "would leave every preset out of the pod, conflicting: ") + %[2]s) : `+
			`(size(%[5]s) > 0 ? "would set " + %[5]s.join(", ") : ""))`,
			names[ci], v("error"), aggregateCEL("variables.conflicts"), v("rejections"), v("changes"))
		vars = append(vars,
			admissionregistrationv1.Variable{Name: "rejections" + n, Expression: rejections},
			admissionregistrationv1.Variable{Name: "conflicts" + n, Expression: conflicts},
			admissionregistrationv1.Variable{Name: "changes" + n, Expression: changes},
			admissionregistrationv1.Variable{Name: "error" + n, Expression: trialErr},
			admissionregistrationv1.Variable{Name: "effect" + n, Expression: effect})
		entries = append(entries, fmt.Sprintf(`(%s != "" ? [%s + %s] : [])`, v("effect"), celString(fmt.Sprintf("%s (%s) ", c, c.spec.Mode)), v("effect")))
		if c.spec.Mode != settingsv1alpha1.ModeWarn {
			continue
		}
		warners++
		// The warning lists at most maxTrialChanges changes.
		summary := fmt.Sprintf(`(%[1]s == "" && size(%[2]s) > %[3]d ? "would set " + %[2]s.slice(0, %[3]d).join(", ") + " and " + string(size(%[2]s) - %[3]d) + " more" : %[4]s)`,
			v("error"), v("changes"), maxTrialChanges, v("effect"))
		warnings = append(warnings, fmt.Sprintf(`(%s != "" ? [%s + %s + " in " + %s] : [])`,
			v("effect"), celString(fmt.Sprintf("%s is in Warn mode; enforced, it ", c)), summary, podNameCEL))
	}
	// A pod the enforced presets refuse is refused before any trial.
	vars = append(vars,
		admissionregistrationv1.Variable{Name: "unenforced", Expression: "size(variables.rejections) > 0 ? [] : " + celConcat(entries)},
		admissionregistrationv1.Variable{Name: "warnings", Expression: "size(variables.rejections) > 0 ? [] : " + celConcat(warnings)})
	// A validation per warning sent, as many as the plugin sends, then the
	// one that points at the audit log.
	var validations []admissionregistrationv1.Validation
	for k := range min(warners, warnlimit.Max) {
		validations = append(validations, admissionregistrationv1.Validation{
			Expression:        fmt.Sprintf("size(variables.warnings) <= %d", k),
			MessageExpression: fmt.Sprintf("variables.warnings[%d]", k),
		})
	}
	if warners > warnlimit.Max {
		validations = append(validations, admissionregistrationv1.Validation{
			Expression:        fmt.Sprintf("size(variables.warnings) <= %d", warnlimit.Max),
			MessageExpression: `"more presets in Warn mode would change " + ` + podNameCEL + ` + ": the audit log lists them"`,
		})
	}
	meta := metav1.ObjectMeta{Name: presetTrialsPolicyName}
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: meta,
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: podCreates(),
				MatchConditions:  presetMatchConditions,
				Variables:        vars,
				Validations:      validations,
				AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{
					Key:             presetTrialsAnnotation,
					ValueExpression: `variables.unenforced.join("; ")`,
				}},
				FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
			},
		}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: meta,
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        presetTrialsPolicyName,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn},
			},
		}
}

// changes is the CEL list of the changes the plugin lists for a trial
// whose presets are b's and do not conflict, preset at being the one
// tried, in the order of the pod's spec: volumes, then each init
// container's and each container's env, envFrom and volumeMounts.
func (b *presetCEL) changes(at int) string {
	var lists []string
	for _, sf := range b.scopes() {
		var scope []string
		for _, f := range sf.families {
			scope = append(scope, b.listChanges(sf.scope, f, at))
		}
		if sf.scope.containers == "" {
			lists = append(lists, scope...)
			continue
		}
		lists = append(lists, inContainers(sf.scope.containers, celConcat(scope)))
	}
	return celConcat(lists)
}

// listChanges is the CEL list of the changes to list f in scope s. The
// plugin compares each item of the tried pod's list with the first item
// of the same key in the pod the enforced presets made (by mountPath for
// mounts) and names each that differs or is missing. The pod's own items
// are there in both, so only those of a key the pod holds twice can
// differ from the first; preset at's PresetWins items take the place of
// the pod's first item of their key and of every later one equal to them
// (the others go); its appended items are missing from the pod.
func (b *presetCEL) listChanges(s presetScope, f family, at int) string {
	list := s.list(f.name)
	key, describe := changeKey(f.name)
	suffix := ""
	if s.containers != "" {
		suffix = ` + " in " + ` + s.owner
	}
	described := 0
	if f.name == "volumeMounts" {
		described = 1
	}
	chain := fmt.Sprintf(`(dups && %s.filter(x, %s == %s)[0] != y ? [%s%s] : [])`, list, key("x"), key("y"), describe("y"), suffix)
	for t := len(f.entries) - 1; t >= 0; t-- {
		e := &f.entries[t]
		if e.preset != at || !b.enforces(e) {
			continue
		}
		claim := b.claim(s, f, t)
		if claim == "" {
			continue
		}
		has := e.keyConds[0]
		first := list + ".filter(x, " + has("x") + ")[0]"
		firstAt := list + ".transformList(k, x, " + has("x") + " ? [k] : []).flatten()[0]"
		chain = fmt.Sprintf("((%s) && %s ? ((%s != %s && (y == %s || %s == j)) ? [%s%s] : []) : %s)",
			claim, has("y"), first, e.literal, e.literal, firstAt, celString(e.describe[described]), suffix, chain)
	}
	own := bind("dups", "size("+list+".map(x, "+key("x")+").distinct()) != size("+list+")", list+".transformList(j, y, "+chain+").flatten()")
	appended := b.appended(s, f)
	out := []string{own}
	for t := range f.entries {
		e := &f.entries[t]
		if e.preset != at {
			continue
		}
		if cond := appended(t); cond != "" {
			out = append(out, "(("+cond+") ? ["+celString(e.describe[described])+suffix+"] : [])")
		}
	}
	return celConcat(out)
}

// changeKey is, for a list the presets merge into, the CEL key the plugin
// lists its changes by, of an item y, and how it names the item: as
// listChanges' plugin counterpart does, quoting as Go's %q does for every
// printable string.
func changeKey(list string) (key, describe func(y string) string) {
	quoted := func(s string) string { return "strings.quote(" + s + ")" }
	switch list {
	case "volumes":
		return func(y string) string { return y + ".name" },
			func(y string) string { return `"volume " + ` + quoted(y+".name") }
	case "env":
		return func(y string) string { return y + ".name" },
			func(y string) string { return `"env " + ` + quoted(y+".name") }
	case "envFrom":
		return func(y string) string {
				return fmt.Sprintf(`[%[1]s.?prefix.orValue(""), %[1]s.?configMapRef.?name.orValue(""), %[1]s.?secretRef.?name.orValue("")]`, y)
			}, func(y string) string {
				return fmt.Sprintf(`"envFrom" + (has(%[1]s.configMapRef) ? " configMapRef " + %[2]s : "") + (has(%[1]s.secretRef) ? " secretRef " + %[3]s : "") + (%[1]s.?prefix.orValue("") != "" ? " with prefix " + %[4]s : "")`,
					y, quoted(y+`.configMapRef.?name.orValue("")`), quoted(y+`.secretRef.?name.orValue("")`), quoted(y+".prefix"))
			}
	}
	return func(y string) string { return y + ".mountPath" },
		func(y string) string { return `"volumeMount at " + ` + quoted(y+".mountPath") }
}
