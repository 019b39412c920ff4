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
	"sync"

	"k8s.io/apiserver/pkg/admission"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The metric names are apiserver_admission_noderestriction_<name>. Labels
// take only the values below: never a node's, pod's or namespace's name.
const (
	metricsNamespace = "apiserver_admission"
	metricsSubsystem = "noderestriction"
)

// family is the kind of request a rule judges: a resource, or a pod
// subresource that has rules of its own.
type family uint8

const (
	// familyOther is a resource no rule covers: only a node whose name
	// cannot be determined is refused there.
	familyOther family = iota
	familyNodes
	familyPods
	familyPodStatus
	familyPodEviction
	familyPVCs
	familyServiceAccounts
	familyLeases
	familyCSINodes
	familyResourceSlices
	familyCSRs
	familyPodCertificateRequests
	// familyResourceClaims has rules for node-scoped accounts only.
	familyResourceClaims
	numFamilies
)

// familyLabels are the values of the resource label, indexed by family.
var familyLabels = [numFamilies]string{
	familyOther:                  "other",
	familyNodes:                  "nodes",
	familyPods:                   "pods",
	familyPodStatus:              "pods/status",
	familyPodEviction:            "pods/eviction",
	familyPVCs:                   "persistentvolumeclaims",
	familyServiceAccounts:        "serviceaccounts",
	familyLeases:                 "leases",
	familyCSINodes:               "csinodes",
	familyResourceSlices:         "resourceslices",
	familyCSRs:                   "certificatesigningrequests",
	familyPodCertificateRequests: "podcertificaterequests",
	familyResourceClaims:         "resourceclaims",
}

// familyOf returns the family of a request by its group, resource and, for
// pods, subresource, whatever the version. A pod subresource that has no
// rule is a pod request: the pod rules refuse it.
func familyOf(a admission.Attributes) family {
	switch a.GetResource().GroupResource() {
	case podResource:
		switch a.GetSubresource() {
		case "status":
			return familyPodStatus
		case "eviction":
			return familyPodEviction
		}
		return familyPods
	case nodeResource:
		return familyNodes
	case pvcResource:
		return familyPVCs
	case serviceAccountResource:
		return familyServiceAccounts
	case leaseResource:
		return familyLeases
	case csiNodeResource:
		return familyCSINodes
	case resourceSliceResource:
		return familyResourceSlices
	case csrResource:
		return familyCSRs
	case podCertificateRequestResource:
		return familyPodCertificateRequests
	case resourceClaimResource:
		return familyResourceClaims
	}
	return familyOther
}

var (
	requests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "requests_total",
		Help:           "Number of requests from nodes judged by NodeRestriction, by resource.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"resource"})
	deniedRequests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      metricsNamespace,
		Subsystem:      metricsSubsystem,
		Name:           "denied_requests_total",
		Help:           "Number of requests from nodes refused by NodeRestriction, by resource and reason.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"resource", "reason"})

	// judged holds the requests counter of each family, looked up once at
	// registration, so that counting a request costs one atomic add and no
	// label lookup. Its series start at zero.
	judged [numFamilies]metrics.CounterMetric

	registerOnce sync.Once
)

// registerMetrics adds the metrics to the registry kube-apiserver serves on
// /metrics; the first caller registers them.
func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(requests, deniedRequests)
		for f := range numFamilies {
			judged[f] = requests.WithLabelValues(familyLabels[f])
		}
	})
}

// record counts a request of family f that a rule judged, and its denial
// when d is not nil. Requests no rule covers are not counted.
func record(f family, d *denial) {
	if f == familyOther && d == nil {
		return
	}
	if c := judged[f]; c != nil {
		c.Inc()
	}
	if d != nil {
		deniedRequests.WithLabelValues(familyLabels[f], string(d.reason)).Inc()
	}
}
