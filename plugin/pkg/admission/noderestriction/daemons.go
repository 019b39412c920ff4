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
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/admitkit/admitkit/plugin/internal/versioned"
	"github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction/apis/v1alpha1"
)

// scopedAccount is a node-scoped service account as the rules use it.
//
// Node daemons (a DaemonSet's CNI agent, device plugin, DRA kubelet plugin)
// run as service accounts whose RBAC reaches every Node, pod and
// ResourceSlice of the cluster, although each pod only ever needs those of
// its own node. The accounts the configuration lists are held to the node
// their credential names, by the kubelet's rules where the kubelet has one.
//
// The node is the authentication.kubernetes.io/node-name extra that
// kube-apiserver puts into a service account token bound to a pod
// scheduled to a node (ServiceAccountTokenPodNodeInfo, GA and locked on
// since 1.32), or to a Node. The token authenticator checks on every
// request that the bound pod still exists with the token's UID (with
// --service-account-lookup, the default), and a
// pod's spec.nodeName never changes once set, so the name is as current
// as the pod. The node-uid extra is not used: a kubelet is identified by
// its node's name alone, the uid is empty when the Node did not exist when
// the token was issued, and comparing it with the informer's Node would
// refuse a daemon's requests while its new Node is still on its way there.
type scopedAccount struct {
	// name is "<namespace>/<name>", for messages.
	name  string
	allow allowances
}

// scopedAccounts are the node-scoped accounts by the user name their
// tokens authenticate as.
type scopedAccounts struct {
	byUser map[string]*scopedAccount
	// lengths has bit len%64 set for the length of each listed user name:
	// most other service accounts are ruled out by it, without hashing
	// their name, so that they pay next to nothing for the feature.
	lengths uint64
}

// newScopedAccounts indexes the node-scoped accounts of cfg; nil when
// there are none, which keeps other users' requests to a nil check.
func newScopedAccounts(cfg *v1alpha1.Configuration) *scopedAccounts {
	if cfg == nil || len(cfg.NodeScopedServiceAccounts) == 0 {
		return nil
	}
	accounts := &scopedAccounts{byUser: make(map[string]*scopedAccount, len(cfg.NodeScopedServiceAccounts))}
	for _, sa := range cfg.NodeScopedServiceAccounts {
		userName := serviceaccount.MakeUsername(sa.Namespace, sa.Name)
		accounts.byUser[userName] = &scopedAccount{
			name:  sa.Namespace + "/" + sa.Name,
			allow: newAllowances(sa.AllowedLabels, sa.AllowedLabelPrefixes, sa.AllowedTaintKeys),
		}
		accounts.lengths |= 1 << (len(userName) % 64)
	}
	return accounts
}

// scopedAccountOf returns the node-scoped account u authenticates as, if
// any. It matches the user name alone, not the service account groups:
// holding a user to a node can only take rights away, so whoever carries
// the name is held, however it was authenticated.
func (p *Plugin) scopedAccountOf(u user.Info) *scopedAccount {
	if u == nil {
		return nil
	}
	name := u.GetName()
	if p.scoped.lengths&(1<<(len(name)%64)) == 0 {
		return nil
	}
	return p.scoped.lookup(name)
}

// lookup is scopedAccountOf past the length filter, apart so that the
// filter inlines into Validate.
func (s *scopedAccounts) lookup(name string) *scopedAccount {
	if !strings.HasPrefix(name, serviceaccount.ServiceAccountUsernamePrefix) {
		return nil
	}
	return s.byUser[name]
}

// credentialNode returns the node u's credential names, "" for none or an
// ambiguous one.
func credentialNode(u user.Info) string {
	values := u.GetExtra()[serviceaccount.NodeNameKey]
	if len(values) != 1 {
		return ""
	}
	return values[0]
}

// validateScoped judges a request of a node-scoped account. Requests no
// daemon rule covers pass uncounted, as other users' do, unless the
// credential names no node: a listed account is one whose every
// legitimate credential is a token of a pod on a node, so any other (a
// legacy Secret token, a token bound to no pod or to an unscheduled one)
// is refused whatever it writes, as a kubelet whose node is unknown is.
// Only a self review passes: it changes nothing, and it is how the holder
// of such a credential finds out which identity and node it carries.
func (p *Plugin) validateScoped(ctx context.Context, acct *scopedAccount, a admission.Attributes, o admission.ObjectInterfaces) error {
	f := familyOf(a)
	nodeName := credentialNode(a.GetUserInfo())
	if nodeName == "" {
		if isSelfReview(a) {
			return nil
		}
		d := forbid(reasonUnknownNode, fmt.Errorf("NodeRestriction holds service account %s to the node its pod runs on, but this credential names no single node in its %s extra (a legacy Secret token, or a token not bound to a pod scheduled to a node, names none)",
			acct.name, serviceaccount.NodeNameKey))
		record(f, d)
		return d.errorFor(a, "")
	}
	d, judged := p.judgeScoped(ctx, acct, nodeName, f, a, o)
	if !judged {
		return nil
	}
	record(f, d)
	if d != nil {
		return d.errorFor(a, fmt.Sprintf("service account %s is held to node %q", acct.name, nodeName))
	}
	return nil
}

// selfReviews are the reviews a client makes of its own credential
// (kubectl auth whoami, kubectl auth can-i): they are answered from the
// request alone and store nothing.
var selfReviews = map[schema.GroupResource]bool{
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}:      true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}: true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}:  true,
}

func isSelfReview(a admission.Attributes) bool {
	return a.GetOperation() == admission.Create && a.GetSubresource() == "" && selfReviews[a.GetResource().GroupResource()]
}

// judgeScoped applies the daemon rules of family f; judged is false for a
// request no rule covers, which RBAC alone decides.
func (p *Plugin) judgeScoped(ctx context.Context, acct *scopedAccount, nodeName string, f family, a admission.Attributes, o admission.ObjectInterfaces) (d *denial, judged bool) {
	switch f {
	case familyNodes:
		return validateScopedNode(acct, nodeName, a, o), true
	case familyPods:
		return p.validateScopedPod(ctx, nodeName, a, o), true
	case familyPodStatus:
		return p.validatePodStatus(nodeName, a, o), true
	case familyPodEviction:
		return p.validatePodEviction(ctx, nodeName, a, o), true
	case familyResourceSlices:
		return validateResourceSlice(nodeName, true, a, o), true
	case familyLeases:
		// Node heartbeats, by the kubelet's rule; a daemon's own leases
		// (leader election) elsewhere are RBAC's business.
		if a.GetNamespace() != corev1.NamespaceNodeLease {
			return nil, false
		}
		return p.validateLease(nodeName, a, o), true
	case familyCSINodes:
		return p.validateCSINode(nodeName, a, o), true
	case familyResourceClaims:
		if a.GetSubresource() != "status" {
			return nil, false
		}
		return validateResourceClaimStatus(nodeName, a, o), true
	}
	return nil, false
}

// validateScopedNode lets a daemon update its own Node by the kubelet's
// rules with its own allowances, and reach its own kubelet's API through
// nodes/proxy, which runs code in any of that node's pods.
func validateScopedNode(acct *scopedAccount, nodeName string, a admission.Attributes, o admission.ObjectInterfaces) *denial {
	switch a.GetOperation() {
	case admission.Update:
		return validateNodeUpdate(nodeName, acct.allow, a, o)
	case admission.Connect:
		return validateNodeConnect(nodeName, a)
	}
	// Registering and removing Nodes is the kubelet's and the node
	// lifecycle controller's business.
	return forbid(reasonUnsupportedRequest, fmt.Errorf("may not create or delete nodes, only update its own"))
}

// validateScopedPod holds a daemon's writes to pods, and its CONNECT
// requests to them, to the pods bound to its node.
func (p *Plugin) validateScopedPod(ctx context.Context, nodeName string, a admission.Attributes, o admission.ObjectInterfaces) *denial {
	switch a.GetOperation() {
	case admission.Update:
		return validateBoundPodUpdate(nodeName, a, o)
	case admission.Delete:
		return p.validateScopedPodDelete(ctx, nodeName, a, o)
	case admission.Connect:
		return p.validatePodConnect(ctx, nodeName, a)
	}
	// A daemon creating pods (or bindings) is a daemon placing
	// workloads, which is the scheduler's and controllers' job.
	what := "pods"
	if sub := a.GetSubresource(); sub != "" {
		what += "/" + sub
	}
	return forbid(reasonUnsupportedRequest, fmt.Errorf("may not create %s, only update, evict and delete pods bound to its node", what))
}

// validateScopedPodDelete judges the pod being deleted, which the server
// hands admission as the old object: for a DeleteCollection, whose request
// names no pod, it does so item by item. The kubelets' rule looks the pod
// up by the request's name instead, as Kubernetes' does; a server that
// hands no old object gets the same lookup here.
func (p *Plugin) validateScopedPodDelete(ctx context.Context, nodeName string, a admission.Attributes, o admission.ObjectInterfaces) *denial {
	if versioned.IsNil(a.GetOldObject()) {
		return p.validatePodDelete(ctx, nodeName, a)
	}
	spec, _, err := readPart(a.GetOldObject(), podGVK, o, "Spec", podSpec)
	if err != nil {
		return forbid(reasonUnreadableObject, err)
	}
	if spec.NodeName != nodeName {
		return forbid(reasonOtherNodeObject, fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", nodeName))
	}
	return nil
}

// validateBoundPodUpdate lets a requester held to node nodeName update a
// pod, through the pod itself or a subresource such as ephemeralcontainers,
// only when the stored pod is bound to that node: changing a pod elsewhere
// (its image, an ephemeral container) would run code on another node.
func validateBoundPodUpdate(nodeName string, a admission.Attributes, o admission.ObjectInterfaces) *denial {
	spec, _, err := readPart(a.GetOldObject(), podGVK, o, "Spec", podSpec)
	if err != nil {
		return forbid(reasonUnreadableObject, err)
	}
	if spec.NodeName != nodeName {
		return forbid(reasonOtherNodeObject, fmt.Errorf("can only update pods with spec.nodeName set to its node, not %q", spec.NodeName))
	}
	return nil
}

func podSpec(pod *corev1.Pod) *corev1.PodSpec { return &pod.Spec }
