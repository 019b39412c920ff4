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

// Package admissiontest builds, for unit tests, the schemes through which a
// plugin meets "internal" objects: stand-ins for kube-apiserver's internal
// types (k8s.io/kubernetes pkg/apis/...), which admitkit cannot import,
// registered at the internal version and reachable only through the
// conversions the test registers. Each test keeps its own stand-in types,
// shaped for what it proves (the same layout as k8s.io/api, fields
// reordered or renamed, a counted conversion); the scheme around them is
// built here.
package admissiontest

import (
	"testing"

	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Scheme returns a scheme holding the versioned types that adders add.
func Scheme(t testing.TB, adders ...func(*runtime.Scheme) error) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range adders {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// StandIn registers internal, a stand-in of type I, as the internal version
// of gk, with to converting it into the versioned type V and from
// converting back. Either may be nil: a scheme without a conversion is how
// a test proves that a plugin never asks for it.
func StandIn[I, V runtime.Object](t testing.TB, s *runtime.Scheme, gk schema.GroupKind, internal I, to func(I, V), from func(V, I)) {
	t.Helper()
	s.AddKnownTypeWithName(gk.WithVersion(runtime.APIVersionInternal), internal)
	var in I
	var v V
	if to != nil {
		if err := s.AddConversionFunc(in, v, func(a, b any, _ conversion.Scope) error {
			to(a.(I), b.(V))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if from != nil {
		if err := s.AddConversionFunc(v, in, func(a, b any, _ conversion.Scope) error {
			from(a.(V), b.(I))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}
