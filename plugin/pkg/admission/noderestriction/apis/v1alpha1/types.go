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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GroupName is the API group of the plugin configuration.
const GroupName = "noderestriction.admission.admitkit.io"

// Version is the version of the plugin configuration.
const Version = "v1alpha1"

// APIVersion is the apiVersion a configuration must declare.
const APIVersion = GroupName + "/" + Version

// Kind is the kind a configuration must declare.
const Kind = "Configuration"

// Configuration widens what a node may change on its own Node object beyond
// Kubernetes' fixed set, names the node daemons to hold to their nodes, and
// says how the plugin reads the objects its rules look up. Nothing listed
// here reaches the node-restriction.kubernetes.io/ label namespace: it is
// the namespace cluster administrators use to steer workloads to trusted
// nodes, so a node may never set those labels itself.
type Configuration struct {
	metav1.TypeMeta `json:",inline"`

	// Lookups is how the rules read the objects a request names but does
	// not carry: the pod of a delete, an eviction, a CONNECT, a pod-bound
	// token or a pod certificate; the Node a mirror pod or a pod
	// certificate names; the service account of a pod certificate; and,
	// for a token's audience, the pod's claims, their volumes and CSI
	// drivers. The rules are the same either way, with the same refusals
	// and messages (a missing object is NotFound as it is); what differs
	// is what a lookup costs and how current its answer is.
	//
	// Informers, the default and Kubernetes' own way: the plugin lists and
	// watches every pod, Node and service account of the cluster (and,
	// with ServiceAccountNodeAudienceRestriction, every claim, volume and
	// CSIDriver) into caches, and looks up there. A lookup costs no
	// request, but each server holding the plugin receives every change to
	// those objects, judged or not, and a cache lags the stored object by
	// the watch's delivery (milliseconds), so an object created or
	// replaced a moment ago may be answered NotFound or by its old UID
	// until it arrives. Use it where the plugin judges every kubelet
	// request: inside kube-apiserver, where those informers are shared.
	//
	// Requests: the plugin watches nothing; each request that needs an
	// object GETs it from kube-apiserver with the request's context, and
	// sees it as stored. A lookup costs one GET (a read from etcd), only
	// for the requests a rule judges that name an object. Use it where
	// few requests are judged, such as admitkit's webhook server, which
	// kube-apiserver calls only for the node-scoped service accounts
	// listed below: there informers would watch every pod of the cluster
	// on every replica for a few daemon requests.
	Lookups Lookups `json:"lookups,omitempty"`

	// AllowedLabels are label keys a node may add, change or remove on its
	// own Node, for example inventory.example.kubernetes.io/rack. A
	// compromised node can use them to steer any workload that selects on
	// them: list only keys no scheduling rule depends on.
	AllowedLabels []string `json:"allowedLabels,omitempty"`

	// AllowedLabelPrefixes are label prefixes (the DNS subdomain before the
	// "/" of a key, written with or without the trailing "/"): a node may
	// add, change or remove any label whose prefix is exactly one of them.
	AllowedLabelPrefixes []string `json:"allowedLabelPrefixes,omitempty"`

	// AllowedTaintKeys are taint keys a node may add, change or remove on its
	// own Node after registration. Changes to other taints stay forbidden.
	AllowedTaintKeys []string `json:"allowedTaintKeys,omitempty"`

	// NodeScopedServiceAccounts are the service accounts of node daemons
	// (a DaemonSet's agent, device plugin or DRA kubelet plugin) to hold to
	// the node their pod runs on, as kubelets are held to theirs: the node
	// is the one their pod-bound token names. The top-level allowances
	// above are the kubelets'; each account carries its own.
	NodeScopedServiceAccounts []NodeScopedServiceAccount `json:"nodeScopedServiceAccounts,omitempty"`
}

// Lookups is how the plugin reads the objects its rules look up: see
// Configuration.Lookups.
type Lookups string

const (
	// LookupsInformers reads them from informer caches (the default).
	LookupsInformers Lookups = "Informers"
	// LookupsRequests GETs them from kube-apiserver when a request needs
	// them.
	LookupsRequests Lookups = "Requests"
)

// NodeScopedServiceAccount names one service account to hold to its node,
// and what it may change on its own Node beyond what every kubelet may.
// Accounts are named, not selected by label: whoever may edit a
// ServiceAccount's labels (any namespace admin, or the daemon itself)
// could otherwise take it out of the scope.
type NodeScopedServiceAccount struct {
	// Namespace of the service account.
	Namespace string `json:"namespace"`
	// Name of the service account.
	Name string `json:"name"`

	// AllowedLabels, AllowedLabelPrefixes and AllowedTaintKeys mean what
	// the Configuration's fields of the same names mean, for this account
	// alone. A node-restriction.kubernetes.io label is never allowed.
	AllowedLabels        []string `json:"allowedLabels,omitempty"`
	AllowedLabelPrefixes []string `json:"allowedLabelPrefixes,omitempty"`
	AllowedTaintKeys     []string `json:"allowedTaintKeys,omitempty"`
}
