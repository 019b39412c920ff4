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
	"errors"

	resourcev1 "k8s.io/api/resource/v1"
	resourcev1beta1 "k8s.io/api/resource/v1beta1"
	resourcev1beta2 "k8s.io/api/resource/v1beta2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/admitkit/admitkit/plugin/internal/versioned"
)

var resourceSliceGVK = resourcev1.SchemeGroupVersion.WithKind("ResourceSlice")

// validateResourceSlice lets a requester held to node nodeName create and
// delete only the ResourceSlices of that node, and, with updates, update
// only those, before and after. A kubelet's updates are left to the Node
// authorizer, which sees the stored object; it cannot see the body of a
// create, nor each object of a DeleteCollection, which reaches admission
// one by one. RBAC sees nothing of an object, so a node-scoped service
// account's updates are judged here.
func validateResourceSlice(nodeName string, updates bool, a admission.Attributes, o admission.ObjectInterfaces) *denial {
	switch a.GetOperation() {
	case admission.Create:
		sliceNode, err := resourceSliceNodeName(a.GetObject(), o)
		if err != nil {
			return forbid(reasonUnreadableObject, err)
		}
		if sliceNode != nodeName {
			return forbid(reasonOtherNodeObject, errors.New("can only create ResourceSlice with the same NodeName as the requesting node"))
		}
	case admission.Update:
		if !updates {
			return nil
		}
		// spec.nodeName is immutable; both are read so that this rule
		// does not depend on it.
		for _, obj := range []runtime.Object{a.GetOldObject(), a.GetObject()} {
			sliceNode, err := resourceSliceNodeName(obj, o)
			if err != nil {
				return forbid(reasonUnreadableObject, err)
			}
			if sliceNode != nodeName {
				return forbid(reasonOtherNodeObject, errors.New("can only update ResourceSlice with the same NodeName as the requesting node"))
			}
		}
	case admission.Delete:
		sliceNode, err := resourceSliceNodeName(a.GetOldObject(), o)
		if err != nil {
			return forbid(reasonUnreadableObject, err)
		}
		if sliceNode != nodeName {
			return forbid(reasonOtherNodeObject, errors.New("can only delete ResourceSlice with the same NodeName as the requesting node"))
		}
	}
	return nil
}

// resourceSliceNodeName returns spec.nodeName of a ResourceSlice in any
// served version, "" when unset (v1beta1 has a plain string, the others a
// pointer; a node name is never empty, so "" cannot match).
func resourceSliceNodeName(obj runtime.Object, o admission.ObjectInterfaces) (string, error) {
	if versioned.IsNil(obj) {
		return "", unexpectedType(obj)
	}
	if name, ok := versionedResourceSliceNodeName(obj); ok {
		return name, nil
	}
	slice, err := asVersioned[resourcev1.ResourceSlice](obj, resourceSliceGVK, o)
	if err != nil {
		return "", err
	}
	return derefString(slice.Spec.NodeName), nil
}

// versionedResourceSliceNodeName reads spec.nodeName of a ResourceSlice of
// a served version; ok is false for any other type.
func versionedResourceSliceNodeName(obj runtime.Object) (name string, ok bool) {
	switch s := obj.(type) {
	case *resourcev1.ResourceSlice:
		return derefString(s.Spec.NodeName), true
	case *resourcev1beta2.ResourceSlice:
		return derefString(s.Spec.NodeName), true
	case *resourcev1beta1.ResourceSlice:
		return s.Spec.NodeName, true
	}
	return "", false
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
