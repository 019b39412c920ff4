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
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
)

var nodeGVK = corev1.SchemeGroupVersion.WithKind("Node")

// validateNode lets a node register, update and delete its own Node object
// only, and keeps it from writing what would widen its own reach: labels
// outside the kubelet's set (which would steer privileged workloads to
// it), taints (removing one attracts workloads meant to stay away),
// configSource (the Node authorizer grants access to what it names) and
// ownerReferences.
func (p *Plugin) validateNode(nodeName string, a admission.Attributes, o admission.ObjectInterfaces) *denial {
	switch a.GetOperation() {
	case admission.Create:
		// On create the apiserver fills the request name from the object.
		if d := otherNode(nodeName, a); d != nil {
			return d
		}
		spec, nodeMeta, err := readNode(a.GetObject(), o)
		if err != nil {
			return forbid(reasonUnreadableObject, err)
		}
		//lint:ignore SA1019 Kubernetes still judges the removed DynamicKubeletConfig field, so must we
		if spec.ConfigSource != nil {
			// "pods" is upstream's wording.
			return forbid(reasonConfigSource, fmt.Errorf("node %q is not allowed to create pods with a non-nil configSource", nodeName))
		}
		if forbidden := p.allow.forbiddenLabels(modifiedLabels(nodeMeta.GetLabels(), nil)); len(forbidden) > 0 {
			return forbid(reasonForbiddenLabel, fmt.Errorf("node %q is not allowed to set the following labels: %s", nodeName, strings.Join(forbidden, ", ")))
		}
		return nil
	case admission.Update:
		return validateNodeUpdate(nodeName, p.allow, a, o)
	}
	return otherNode(nodeName, a)
}

// otherNode refuses a request about a Node other than nodeName.
func otherNode(nodeName string, a admission.Attributes) *denial {
	if a.GetName() != nodeName {
		return forbid(reasonOtherNodeObject, fmt.Errorf("node %q is not allowed to modify node %q", nodeName, a.GetName()))
	}
	return nil
}

// validateNodeUpdate judges an update (status included) of a Node by a
// requester held to node nodeName, a kubelet or a node-scoped service
// account, whose own allowances are al: only its own Node, and there
// nothing that widens its reach.
func validateNodeUpdate(nodeName string, al allowances, a admission.Attributes, o admission.ObjectInterfaces) *denial {
	if d := otherNode(nodeName, a); d != nil {
		return d
	}
	spec, nodeMeta, err := readNode(a.GetObject(), o)
	if err != nil {
		return forbid(reasonUnreadableObject, err)
	}
	oldSpec, oldMeta, err := readNode(a.GetOldObject(), o)
	if err != nil {
		return forbid(reasonUnreadableObject, err)
	}
	// Dropping configSource is fine: older kubelets clear fields they
	// do not know on status updates.
	//lint:ignore SA1019 Kubernetes still judges the removed DynamicKubeletConfig field, so must we
	if spec.ConfigSource != nil && !apiequality.Semantic.DeepEqual(spec.ConfigSource, oldSpec.ConfigSource) {
		return forbid(reasonConfigSource, fmt.Errorf("node %q is not allowed to update configSource to a new non-nil configSource", nodeName))
	}
	if !apiequality.Semantic.DeepEqual(al.withoutAllowedTaints(spec.Taints), al.withoutAllowedTaints(oldSpec.Taints)) {
		return forbid(reasonTaintChange, fmt.Errorf("node %q is not allowed to modify taints", nodeName))
	}
	if !apiequality.Semantic.DeepEqual(nodeMeta.GetOwnerReferences(), oldMeta.GetOwnerReferences()) {
		return forbid(reasonOwnerReferenceChange, fmt.Errorf("node %q is not allowed to modify ownerReferences", nodeName))
	}
	if forbidden := al.forbiddenLabels(modifiedLabels(nodeMeta.GetLabels(), oldMeta.GetLabels())); len(forbidden) > 0 {
		// Upstream's message has no node name here.
		return forbid(reasonForbiddenLabel, fmt.Errorf("is not allowed to modify labels: %s", strings.Join(forbidden, ", ")))
	}
	return nil
}

// readNode returns what the node rules read of a Node in any version: its
// metadata and its spec. Of an internal Node only the spec is converted,
// not the status a kubelet rewrites every few seconds (images, conditions,
// addresses).
func readNode(obj runtime.Object, o admission.ObjectInterfaces) (*corev1.NodeSpec, metav1.Object, error) {
	return readPart(obj, nodeGVK, o, "Spec", func(n *corev1.Node) *corev1.NodeSpec { return &n.Spec })
}

// withoutAllowedTaints leaves out the taints whose keys al lets the
// requester change; without allowed keys that is none, as in Kubernetes.
func (al allowances) withoutAllowedTaints(taints []corev1.Taint) []corev1.Taint {
	if !al.hasTaintKeys {
		return taints
	}
	var kept []corev1.Taint
	for _, t := range taints {
		if !al.taintAllowed(t.Key) {
			kept = append(kept, t)
		}
	}
	return kept
}

// modifiedLabels returns the keys added, removed or changed between two label sets.
func modifiedLabels(a, b map[string]string) sets.Set[string] {
	modified := sets.New[string]()
	for k, va := range a {
		if vb, ok := b[k]; !ok || va != vb {
			modified.Insert(k)
		}
	}
	for k, vb := range b {
		if va, ok := a[k]; !ok || va != vb {
			modified.Insert(k)
		}
	}
	return modified
}

// forbiddenLabels returns, sorted, the keys among modified that a requester
// with allowances al may not set on its Node. Unprefixed keys and keys
// outside kubernetes.io and k8s.io are the cluster's own business and
// allowed; node-restriction.kubernetes.io is reserved for administrators
// and never allowed; other kubernetes.io and k8s.io keys are allowed only
// when they are kubelet labels or in al.
func (al allowances) forbiddenLabels(modified sets.Set[string]) []string {
	var forbidden []string
	for key := range modified {
		ns := labelNamespace(key)
		switch {
		case ns == corev1.LabelNamespaceNodeRestriction || strings.HasSuffix(ns, "."+corev1.LabelNamespaceNodeRestriction):
			forbidden = append(forbidden, key)
		case isKubernetesNamespace(ns) && !isKubeletLabel(key, ns) && !al.labelAllowed(key):
			forbidden = append(forbidden, key)
		}
	}
	sort.Strings(forbidden)
	return forbidden
}

// labelNamespace is the prefix of a label key, before the first "/"; an
// unprefixed key has none.
func labelNamespace(key string) string {
	ns, _, found := strings.Cut(key, "/")
	if !found {
		return ""
	}
	return ns
}

func isKubernetesNamespace(ns string) bool {
	return ns == "kubernetes.io" || strings.HasSuffix(ns, ".kubernetes.io") ||
		ns == "k8s.io" || strings.HasSuffix(ns, ".k8s.io")
}

// kubeletLabels are the well-known labels a kubelet sets on its own Node
// (k8s.io/kubelet pkg/apis, which is not among admitkit's dependencies).
var kubeletLabels = sets.New(
	corev1.LabelHostname,
	corev1.LabelTopologyZone,
	corev1.LabelTopologyRegion,
	corev1.LabelFailureDomainBetaZone,
	corev1.LabelFailureDomainBetaRegion,
	corev1.LabelInstanceType,
	corev1.LabelInstanceTypeStable,
	corev1.LabelOSStable,
	corev1.LabelArchStable,
	"beta.kubernetes.io/os",
	"beta.kubernetes.io/arch",
)

// kubeletLabelNamespaces are the label prefixes (with their subdomains)
// reserved for kubelet-set labels.
var kubeletLabelNamespaces = []string{
	corev1.LabelNamespaceSuffixKubelet,
	corev1.LabelNamespaceSuffixNode,
}

func isKubeletLabel(key, ns string) bool {
	if kubeletLabels.Has(key) {
		return true
	}
	for _, k := range kubeletLabelNamespaces {
		if ns == k || strings.HasSuffix(ns, "."+k) {
			return true
		}
	}
	return false
}
