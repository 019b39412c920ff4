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
	"io"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Objects are the policies and bindings in the order they are best
// applied: each policy before the bindings that name it, so a binding is
// never briefly bound to nothing. Each carries its apiVersion and kind.
func (r Result) Objects() []runtime.Object {
	gv := admissionregistrationv1.SchemeGroupVersion
	var out []runtime.Object
	for i := range r.MutatingPolicies {
		p := r.MutatingPolicies[i].DeepCopy()
		p.SetGroupVersionKind(gv.WithKind("MutatingAdmissionPolicy"))
		out = append(out, p)
	}
	for i := range r.ValidatingPolicies {
		p := r.ValidatingPolicies[i].DeepCopy()
		p.SetGroupVersionKind(gv.WithKind("ValidatingAdmissionPolicy"))
		out = append(out, p)
	}
	for i := range r.MutatingBindings {
		b := r.MutatingBindings[i].DeepCopy()
		b.SetGroupVersionKind(gv.WithKind("MutatingAdmissionPolicyBinding"))
		out = append(out, b)
	}
	for i := range r.ValidatingBindings {
		b := r.ValidatingBindings[i].DeepCopy()
		b.SetGroupVersionKind(gv.WithKind("ValidatingAdmissionPolicyBinding"))
		out = append(out, b)
	}
	return out
}

// WriteYAML writes r's objects as one multi-document YAML stream, ready
// for kubectl apply -f.
func (r Result) WriteYAML(w io.Writer) error {
	for i, obj := range r.Objects() {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}

// WriteReport writes a line per object read: what compiled, and what did
// not with each reason by field, sorted so that runs compare.
func (r Result) WriteReport(w io.Writer) error {
	var lines []string
	for _, s := range r.Compiled {
		lines = append(lines, "compiled: "+s.String())
	}
	for _, f := range r.Refused {
		for _, e := range f.Errs {
			lines = append(lines, fmt.Sprintf("not compiled: %s: %s", f.Source, e.Error()))
		}
	}
	slices.Sort(lines)
	lines = append(lines, fmt.Sprintf("%d compiled, %d not compiled", len(r.Compiled), len(r.Refused)))
	_, err := io.WriteString(w, strings.Join(lines, "\n")+"\n")
	return err
}

// String is "<Kind> <namespace>/<name>", or "<Kind> <name>" for an object
// of no namespace.
func (s Source) String() string {
	if s.Namespace == "" {
		return s.Kind + " " + s.Name
	}
	return s.Kind + " " + s.Namespace + "/" + s.Name
}
