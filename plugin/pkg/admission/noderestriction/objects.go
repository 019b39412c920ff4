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

package noderestriction

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/klog/v2"

	"github.com/admitkit/admitkit/plugin/internal/versioned"
)

// unexpectedType is the error a rule returns when the object is not the kind
// it handles; the text is upstream's, word for word, whatever the reason.
func unexpectedType(obj runtime.Object) error {
	return fmt.Errorf("unexpected type %T", obj)
}

// asVersioned returns obj as the k8s.io/api type *T of gvk, converting an
// internal object with the chain's scheme, or the "unexpected type" error
// upstream's type assertion gives.
//
// Inside kube-apiserver an admission plugin sees internal objects
// (k8s.io/kubernetes pkg/apis/...), which admitkit cannot import; elsewhere,
// and in tests, it sees k8s.io/api types. Every rule is written once, on
// k8s.io/api types: it reads metadata, which both kinds of object share,
// through meta.Accessor, and converts an object (package versioned) only
// once identity and resource are decided and only when it needs more.
func asVersioned[T any, PT interface {
	*T
	runtime.Object
}](obj runtime.Object, gvk schema.GroupVersionKind, o admission.ObjectInterfaces) (PT, error) {
	if versioned.IsNil(obj) {
		return nil, unexpectedType(obj)
	}
	typed, err := versioned.As[T, PT](obj, gvk, o)
	if err != nil {
		klog.V(4).InfoS("NodeRestriction cannot read the object as its kind", "type", fmt.Sprintf("%T", obj), "kind", gvk, "err", err)
		return nil, unexpectedType(obj)
	}
	return typed, nil
}

// readPart returns the metadata of obj, a T in any version, and one of its
// top-level fields (name, which get picks out of a T) in k8s.io/api form.
// Metadata is shared by internal and versioned objects; of an internal
// object only the field is converted, or, when the scheme cannot convert it
// alone, the whole object.
func readPart[T, F any, PT interface {
	*T
	runtime.Object
}](obj runtime.Object, gvk schema.GroupVersionKind, o admission.ObjectInterfaces, name string, get func(PT) *F) (*F, metav1.Object, error) {
	if typed, ok := obj.(PT); ok && typed != nil {
		m, err := meta.Accessor(typed)
		if err != nil {
			return nil, nil, unexpectedType(obj)
		}
		return get(typed), m, nil
	}
	if !isKind(obj, gvk.GroupKind(), o, func(runtime.Object) bool { return false }) {
		return nil, nil, unexpectedType(obj)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, unexpectedType(obj)
	}
	part := new(F)
	if err := versioned.Field(obj, name, part, o); err == nil {
		return part, m, nil
	}
	whole, err := asVersioned[T, PT](obj, gvk, o)
	if err != nil {
		return nil, nil, err
	}
	return get(whole), m, nil
}

// isKind reports whether obj is of the given group and kind in any version,
// internal included, without converting it. versionedTypes short-circuits
// the common case; the typer answers for internal objects.
func isKind(obj runtime.Object, gk schema.GroupKind, o admission.ObjectInterfaces, versionedTypes func(runtime.Object) bool) bool {
	if versioned.IsNil(obj) {
		return false
	}
	if versionedTypes(obj) {
		return true
	}
	if o == nil || o.GetObjectTyper() == nil {
		return false
	}
	kinds, _, err := o.GetObjectTyper().ObjectKinds(obj)
	if err != nil {
		return false
	}
	for _, k := range kinds {
		if k.GroupKind() == gk {
			return true
		}
	}
	return false
}

// objectName reads metadata.name of any object that has ObjectMeta;
// internal and versioned objects share metav1.ObjectMeta.
func objectName(obj runtime.Object) (string, error) {
	if versioned.IsNil(obj) {
		return "", fmt.Errorf("no object")
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return "", err
	}
	return accessor.GetName(), nil
}
