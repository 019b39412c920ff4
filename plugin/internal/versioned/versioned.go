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

// Package versioned gives admission plugins the k8s.io/api form of the
// objects an admission chain hands them. Inside kube-apiserver those are
// internal objects (k8s.io/kubernetes pkg/apis/...), which admitkit cannot
// import; in tests and generic servers they already are k8s.io/api types.
// Every plugin of the module converts through this package, so that there
// is one way to do it: the chain's own scheme, through
// admission.ConvertToGVK, as the webhook dispatchers do.
package versioned

import (
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
)

// To returns obj as the Go type the chain's scheme has for gvk: obj itself
// when it already is of that type, otherwise a converted copy, and whether
// it converted. A mutating plugin that changes a converted copy writes it
// back with Back.
func To(obj runtime.Object, gvk schema.GroupVersionKind, o admission.ObjectInterfaces) (runtime.Object, bool, error) {
	if err := convertible(obj, gvk, o); err != nil {
		return nil, false, err
	}
	if typer := o.GetObjectTyper(); typer != nil {
		// A scheme registers a kind for one Go type only, so an object
		// whose type it has under gvk is of the type New(gvk) makes; asking
		// the typer first spares a request on a versioned object a new
		// empty object (a Pod's is over a kilobyte) made only to compare
		// types.
		if kinds, _, err := typer.ObjectKinds(obj); err == nil && slices.Contains(kinds, gvk) {
			return obj, false, nil
		}
	}
	out, err := o.GetObjectCreater().New(gvk)
	if err != nil {
		return nil, false, err
	}
	if reflect.TypeOf(out) == reflect.TypeOf(obj) {
		return obj, false, nil
	}
	converted, err := admission.ConvertToGVK(obj, gvk, o)
	if err != nil {
		return nil, false, err
	}
	return converted, true, nil
}

// As is To for a caller that knows the k8s.io/api Go type PT of gvk: an
// object that already is a PT is returned as it is, without asking the
// scheme.
func As[T any, PT interface {
	*T
	runtime.Object
}](obj runtime.Object, gvk schema.GroupVersionKind, o admission.ObjectInterfaces) (PT, error) {
	if typed, ok := obj.(PT); ok && typed != nil {
		return typed, nil
	}
	if err := convertible(obj, gvk, o); err != nil {
		return nil, err
	}
	out, err := admission.ConvertToGVK(obj, gvk, o)
	if err != nil {
		return nil, err
	}
	typed, ok := out.(PT)
	if !ok {
		return nil, fmt.Errorf("the scheme made a %T of %v, not a %T", out, gvk, PT(nil))
	}
	return typed, nil
}

// Field converts one top-level struct field of obj, such as Spec or Status
// (internal and k8s.io/api types share those names), into out, a pointer to
// the field's k8s.io/api type, through the conversions the chain's scheme
// registered for that pair of types: the same functions that convert it as
// part of the whole object. It is for a rule that reads a small part of a
// large object. An object without such a field, or a scheme without such a
// conversion, is an error; the caller then converts the whole object with
// To or As, so that no object the scheme can convert is refused.
func Field(obj runtime.Object, name string, out any, o admission.ObjectInterfaces) error {
	if err := convertible(obj, schema.GroupVersionKind{}, o); err != nil {
		return err
	}
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("%T is not a pointer to a struct", obj)
	}
	sf, ok := v.Elem().Type().FieldByName(name)
	if !ok || !sf.IsExported() || len(sf.Index) != 1 || sf.Type.Kind() != reflect.Struct {
		return fmt.Errorf("%T has no struct field %s", obj, name)
	}
	return o.GetObjectConvertor().Convert(v.Elem().Field(sf.Index[0]).Addr().Interface(), out, nil)
}

// Back writes versioned, a converted copy that a mutating plugin changed,
// back into obj, the request's object.
func Back(versioned, obj runtime.Object, o admission.ObjectInterfaces) error {
	return o.GetObjectConvertor().Convert(versioned, obj, nil)
}

// convertible refuses what ConvertToGVK cannot take: no object (a nil
// interface or a typed nil, which a careless caller may put into the
// attributes) or no scheme.
func convertible(obj runtime.Object, gvk schema.GroupVersionKind, o admission.ObjectInterfaces) error {
	if obj == nil {
		return fmt.Errorf("no object to read as %v", gvk)
	}
	if IsNil(obj) {
		return fmt.Errorf("no %T to read as %v", obj, gvk)
	}
	if o == nil {
		return fmt.Errorf("no object convertor to read %T as %v", obj, gvk)
	}
	return nil
}

// IsNil reports a nil interface or a typed nil pointer: no object at all,
// which a careless caller (or a fuzzer) may put into the attributes. A rule
// asks before it reads the object, so that it refuses instead of panicking.
func IsNil(obj runtime.Object) bool {
	if obj == nil {
		return true
	}
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
