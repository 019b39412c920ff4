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
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	mutationsv1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1"
	mutationsv1alpha1 "github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/mutations/v1alpha1"
)

// assignImageOp is an AssignImage's operation: it replaces the parts of an
// image reference it names (image.go) and keeps the others.
type assignImageOp struct {
	parts imageRef // "" for a part left as it is
}

// endType: a string, and nothing may be written below it.
func (assignImageOp) endType() impliedType { return impliedType{kind: "string"} }

// image is current with the assigned parts, and whether it is current
// as it is: parts that are already the assigned ones, found without
// building the string, which is most of what a pod that already has its
// images would cost.
func (a assignImageOp) image(current string) (string, bool) {
	was := splitImage(current)
	img := was
	if a.parts.domain != "" {
		img.domain = a.parts.domain
	}
	if a.parts.path != "" {
		img.path = a.parts.path
	}
	if a.parts.tag != "" {
		img.tag = a.parts.tag
	}
	if img == was {
		return current, true
	}
	return img.String(), false
}

func (a assignImageOp) summary(where string) string {
	var parts []string
	for _, p := range []struct{ name, v string }{{"domain", a.parts.domain}, {"path", a.parts.path}, {"tag", a.parts.tag}} {
		if p.v != "" {
			parts = append(parts, p.name+" "+jsonShort(p.v))
		}
	}
	return fmt.Sprintf("set the image at %s to %s", where, strings.Join(parts, ", "))
}

func (a assignImageOp) write(m *Mutator, s slot, exists bool, _ requestMeta) (effect, error) {
	cur := ""
	if exists {
		var ok bool
		if cur, ok = s.str(); !ok {
			return effect{}, m.fail(fmt.Errorf("the image at %s is %s, not a string", m.location.String(), s.typeName()))
		}
	}
	// Never empty: validation requires one of the parts.
	img, same := a.image(cur)
	if exists && (same || img == cur) {
		return effect{}, nil
	}
	e, err := s.set(img)
	if err != nil {
		return e, m.fail(err)
	}
	return e, nil
}

// newAssignImage validates an AssignImage and returns its mutator.
func newAssignImage(a *mutationsv1alpha1.AssignImage) (*Mutator, field.ErrorList) {
	m, errs := newMutator(mutationsv1.KindAssignImage, a.Name, a.Spec.Location, endRule{listEnd: "must end in the field holding the image, not in a list selector", keepKey: true})
	m.generation = a.Generation
	pp := a.Spec.Parameters
	if msg := validateImageParts(pp.AssignDomain, pp.AssignPath, pp.AssignTag); msg != "" {
		errs = append(errs, field.Invalid(field.NewPath("spec", "parameters"), fmt.Sprintf("assignDomain=%q assignPath=%q assignTag=%q", pp.AssignDomain, pp.AssignPath, pp.AssignTag), msg))
	}
	m.op = assignImageOp{imageRef{domain: pp.AssignDomain, path: pp.AssignPath, tag: pp.AssignTag}}
	return m.finish(a.Spec.ApplyTo, pp.PathTests, a.Spec.Match, errs)
}
