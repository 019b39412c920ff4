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
	"reflect"
	"unsafe"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The shapes below are what each hot rule reads of an object that is not
// a k8s.io/api type (see layout.go). Metadata is not among them: internal
// and versioned objects share metav1.ObjectMeta, read through meta.Accessor.

// podStatusShape: what a pod status update is judged on.
type podStatusShape struct {
	meta            path // ObjectMeta
	nodeName        path // Spec.NodeName
	claimStatuses   path // Status.ResourceClaimStatuses
	extendedStatus  path // Status.ExtendedResourceClaimStatus
	allocatableRefs path // Status.NodeAllocatableResourceClaimStatuses
}

var podStatusShapes = &shapeCache[podStatusShape]{
	kind: schema.GroupKind{Kind: "Pod"},
	build: func(r *resolver, t reflect.Type) *podStatusShape {
		return &podStatusShape{
			meta:            objectMeta(r, t),
			nodeName:        r.field(t, reflect.String, "Spec", "NodeName"),
			claimStatuses:   r.direct(t, reflect.Slice, "Status", "ResourceClaimStatuses"),
			extendedStatus:  r.direct(t, reflect.Pointer, "Status", "ExtendedResourceClaimStatus"),
			allocatableRefs: r.direct(t, reflect.Slice, "Status", "NodeAllocatableResourceClaimStatuses"),
		}
	},
}

// noClaimStatuses reports a pod without any of the three claim statuses,
// in three loads, so that the common update skips the comparisons. The
// fields are resolved direct, so this inlines.
func (s *podStatusShape) noClaimStatuses(pod unsafe.Pointer) bool {
	return s.claimStatuses.directLen(pod) == 0 && s.allocatableRefs.directLen(pod) == 0 && s.extendedStatus.directPtr(pod) == nil
}

// objectMeta resolves the metav1.ObjectMeta every object type embeds:
// read through its own type, metadata costs no interface dispatch, which
// at tens of nanoseconds a request is measurable.
func objectMeta(r *resolver, t reflect.Type) path {
	return exactType[metav1.ObjectMeta](r, t, "ObjectMeta")
}

// semanticSliceEqual compares a slice field of two objects of one type.
// Two empty lists, the common case, need no reflection; otherwise
// apimachinery's semantic equality decides, which for these status types
// (names, claim names, string lists and quantities) is the element-wise
// comparison the versioned path writes out.
func semanticSliceEqual(f *path, a, b unsafe.Pointer) bool {
	_, na := f.slice(a)
	_, nb := f.slice(b)
	if na == 0 && nb == 0 {
		return true
	}
	if na != nb {
		return false
	}
	return apiequality.Semantic.DeepEqual(f.value(a), f.value(b))
}

// semanticPtrEqual is semanticSliceEqual for a pointer field.
func semanticPtrEqual(f *path, a, b unsafe.Pointer) bool {
	pa, pb := f.ptr(a), f.ptr(b)
	if pa == nil || pb == nil {
		return pa == pb
	}
	return apiequality.Semantic.DeepEqual(f.value(a), f.value(b))
}

// nodeShape: what a node create or update is judged on.
type nodeShape struct {
	configSource path // Spec.ConfigSource
	taints       path // Spec.Taints
	taint        taintShape
}

type taintShape struct {
	key, value, effect path
	timeAdded          path // *metav1.Time
}

var nodeShapes = &shapeCache[nodeShape]{
	kind: schema.GroupKind{Kind: "Node"},
	build: func(r *resolver, t reflect.Type) *nodeShape {
		s := &nodeShape{
			configSource: r.field(t, reflect.Pointer, "Spec", "ConfigSource"),
			taints:       r.field(t, reflect.Slice, "Spec", "Taints"),
		}
		if r.err != nil {
			return nil
		}
		tt := elem(&s.taints)
		s.taint = taintShape{
			key:       r.field(tt, reflect.String, "Key"),
			value:     r.field(tt, reflect.String, "Value"),
			effect:    r.field(tt, reflect.String, "Effect"),
			timeAdded: exactType[*metav1.Time](r, tt, "TimeAdded"),
		}
		return s
	},
}

// taintsUnchanged is Plugin.taintsUnchanged on two internal nodes, with
// the same semantics as taintEqual, skipping the allowed keys on both sides
// without building filtered copies.
func (p *Plugin) internalTaintsUnchanged(s *nodeShape, newNode, oldNode unsafe.Pointer) bool {
	nd, nn := s.taints.slice(newNode)
	od, on := s.taints.slice(oldNode)
	i, j := 0, 0
	for {
		if p.allow.hasTaintKeys {
			for i < nn && p.allow.taintAllowed(s.taint.key.str(s.taints.at(nd, i))) {
				i++
			}
			for j < on && p.allow.taintAllowed(s.taint.key.str(s.taints.at(od, j))) {
				j++
			}
		}
		if i == nn || j == on {
			return i == nn && j == on
		}
		if !s.taint.equal(s.taints.at(nd, i), s.taints.at(od, j)) {
			return false
		}
		i++
		j++
	}
}

func (s *taintShape) equal(a, b unsafe.Pointer) bool {
	if s.key.str(a) != s.key.str(b) || s.value.str(a) != s.value.str(b) || s.effect.str(a) != s.effect.str(b) {
		return false
	}
	ta, tb := *typedAt[*metav1.Time](&s.timeAdded, a), *typedAt[*metav1.Time](&s.timeAdded, b)
	if ta == nil || tb == nil {
		return ta == tb
	}
	return ta.UTC() == tb.UTC()
}

// tokenRequestShape: what a service account token request is judged on.
type tokenRequestShape struct {
	boundObjectRef path // Spec.BoundObjectRef
	refKind        path
	refAPIVersion  path
	refName        path
	refUID         path
	audiences      path // Spec.Audiences, []string
}

var tokenRequestShapes = &shapeCache[tokenRequestShape]{
	kind: schema.GroupKind{Group: "authentication.k8s.io", Kind: "TokenRequest"},
	build: func(r *resolver, t reflect.Type) *tokenRequestShape {
		s := &tokenRequestShape{
			boundObjectRef: r.field(t, reflect.Pointer, "Spec", "BoundObjectRef"),
			audiences:      exactType[[]string](r, t, "Spec", "Audiences"),
		}
		if r.err != nil {
			return nil
		}
		rt := elem(&s.boundObjectRef)
		s.refKind = r.field(rt, reflect.String, "Kind")
		s.refAPIVersion = r.field(rt, reflect.String, "APIVersion")
		s.refName = r.field(rt, reflect.String, "Name")
		s.refUID = r.field(rt, reflect.String, "UID")
		return s
	},
}
