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
	"encoding/json"
	"fmt"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ModeAnnotation sets a mutator's mode. It is an annotation rather than a
// field so that the object keeps Gatekeeper's schema; Gatekeeper ignores it
// and enforces the mutator whatever it says.
const ModeAnnotation = "locationmutator.admission.admitkit.io/mode"

// Mode is how a mutator takes part in admission.
type Mode string

const (
	// ModeEnforce changes the objects the mutator matches; it is the mode
	// of a mutator without the annotation.
	ModeEnforce Mode = "Enforce"
	// ModeWarn changes nothing; what the mutator would change is sent to
	// the client as a warning and recorded in the audit log.
	ModeWarn Mode = "Warn"
	// ModeAudit changes nothing; what the mutator would change is recorded
	// in the audit log only.
	ModeAudit Mode = "Audit"
)

// modes are the values ModeAnnotation takes.
var modes = []Mode{ModeEnforce, ModeWarn, ModeAudit}

// modePath is where a bad mode is reported.
var modePath = field.NewPath("metadata", "annotations").Key(ModeAnnotation)

// parseMode reads the mode from a mutator object's annotations. A value
// that is set but not one of modes is an error, never Enforce: a typo in
// "Warn" must not make a trial mutator change every object it matches.
func parseMode(annotations map[string]string) (Mode, *field.Error) {
	v, ok := annotations[ModeAnnotation]
	if !ok {
		return ModeEnforce, nil
	}
	for _, m := range modes {
		if v == string(m) {
			return m, nil
		}
	}
	return "", field.NotSupported(modePath, v, modes)
}

// withMode sets the mode of a mutator decoded from obj, or adds the
// annotation's problem to errs (and drops m, as every other invalid field
// does).
func withMode(m *Mutator, obj metav1.Object, errs field.ErrorList) (*Mutator, field.ErrorList) {
	mode, err := parseMode(obj.GetAnnotations())
	if err != nil {
		return nil, append(errs, err)
	}
	if m != nil {
		m.mode = mode
	}
	return m, errs
}

// Enforced reports whether the mutator changes the objects it matches.
func (m *Mutator) Enforced() bool { return m.mode == ModeEnforce || m.mode == "" }

// HasUnenforced reports whether some mutator of s is in Warn or Audit
// mode. Without one, admission runs the candidates as they are and tries
// nothing.
func (s *System) HasUnenforced() bool { return s.unenforced }

// Maximum lengths of what Effect shows of a location and a value, so that a
// report of a mutator with a large value stays short.
const (
	maxEffectLocation = 120
	maxEffectValue    = 80
	maxEffectValues   = 8
)

// Effect says in a few words what the mutator does, as a verb phrase:
// `set spec.containers[name: *].imagePullPolicy to "Always"`. It is bounded
// in length whatever the mutator holds, for warnings and audit annotations.
func (m *Mutator) Effect() string {
	return m.op.summary(Shorten(m.location.String(), maxEffectLocation))
}

// jsonShort prints v as JSON, cut to maxEffectValue bytes.
func jsonShort(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return Shorten(fmt.Sprintf("%v", v), maxEffectValue)
	}
	return Shorten(string(data), maxEffectValue)
}

// Shorten cuts s to at most n bytes, on a rune boundary, marking the
// cut, so that what a report quotes from a mutator or an error stays short.
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
