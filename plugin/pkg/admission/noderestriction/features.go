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
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/component-base/featuregate"
)

// The gates this plugin consults. They are declared in k8s.io/kubernetes
// pkg/features, which admitkit must not import, so the names are repeated
// here; a kube-apiserver build registers the same names itself.
const (
	// RecoverVolumeExpansionFailure lets a node also change a PVC's
	// status.allocatedResources and status.allocatedResourceStatuses.
	RecoverVolumeExpansionFailure featuregate.Feature = "RecoverVolumeExpansionFailure"
	// ServiceAccountNodeAudienceRestriction limits the audiences a node may
	// request tokens for to those its pods use.
	ServiceAccountNodeAudienceRestriction featuregate.Feature = "ServiceAccountNodeAudienceRestriction"
	// PodCertificateRequest enables node-created PodCertificateRequests.
	PodCertificateRequest featuregate.Feature = "PodCertificateRequest"
	// CSIVolumeHealth enables the csinodes/status subresource for nodes.
	CSIVolumeHealth featuregate.Feature = "CSIVolumeHealth"
	// AllowInsecureKubeletCertificateSigningRequests turns off the CSR
	// common-name check for kubelet signers.
	AllowInsecureKubeletCertificateSigningRequests featuregate.Feature = "AllowInsecureKubeletCertificateSigningRequests"
)

// versionedFeatures mirrors Kubernetes 1.37's specs for our gates, so a gate
// set we register behaves like kube-apiserver's at every emulation version.
var versionedFeatures = map[featuregate.Feature]featuregate.VersionedSpecs{
	RecoverVolumeExpansionFailure: {
		{Version: version.MustParse("1.23"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.32"), Default: true, PreRelease: featuregate.Beta},
		{Version: version.MustParse("1.34"), Default: true, PreRelease: featuregate.GA, LockToDefault: true},
	},
	ServiceAccountNodeAudienceRestriction: {
		{Version: version.MustParse("1.32"), Default: false, PreRelease: featuregate.Beta},
		{Version: version.MustParse("1.33"), Default: true, PreRelease: featuregate.Beta},
	},
	PodCertificateRequest: {
		{Version: version.MustParse("1.34"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.35"), Default: false, PreRelease: featuregate.Beta},
		{Version: version.MustParse("1.37"), Default: true, PreRelease: featuregate.GA},
	},
	CSIVolumeHealth: {
		{Version: version.MustParse("1.21"), Default: false, PreRelease: featuregate.Alpha},
	},
	AllowInsecureKubeletCertificateSigningRequests: {
		{Version: version.MustParse("1.0"), Default: true, PreRelease: featuregate.GA},
		{Version: version.MustParse("1.31"), Default: false, PreRelease: featuregate.Deprecated},
	},
}

// defaultFeatures are the 1.37 defaults, used when the server's gate does
// not know a name at all (a generic apiserver built without k8s.io/kubernetes).
var defaultFeatures = map[featuregate.Feature]bool{
	RecoverVolumeExpansionFailure:                  true,
	ServiceAccountNodeAudienceRestriction:          true,
	PodCertificateRequest:                          true,
	CSIVolumeHealth:                                false,
	AllowInsecureKubeletCertificateSigningRequests: false,
}

// AddFeatureGates registers the gates NodeRestriction consults into gate,
// skipping every name gate already knows. A kube-apiserver linked with
// k8s.io/kubernetes has registered them all already, and registering a name
// twice with different specs is an error, so only missing names are added.
// Call it before flags are parsed, so that --feature-gates can set them.
func AddFeatureGates(gate featuregate.MutableVersionedFeatureGate) error {
	known := gate.GetAllVersioned()
	missing := map[featuregate.Feature]featuregate.VersionedSpecs{}
	for name, specs := range versionedFeatures {
		if _, ok := known[name]; !ok {
			missing[name] = specs
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return gate.AddVersioned(missing)
}

// gateValues is the plugin's copy of the gates, taken once at start-up:
// reading a FeatureGate takes locks and map lookups we do not want per request.
type gateValues struct {
	expansionRecovery            bool
	audienceRestriction          bool
	podCertificateRequests       bool
	csiVolumeHealth              bool
	insecureKubeletCSRsPermitted bool
}

func readGates(gates featuregate.FeatureGate) gateValues {
	known := knownFeatureNames(gates)
	enabled := func(name featuregate.Feature) bool {
		// FeatureGate.Enabled panics on a name it does not know.
		if _, ok := known[name]; !ok {
			return defaultFeatures[name]
		}
		return gates.Enabled(name)
	}
	return gateValues{
		expansionRecovery:            enabled(RecoverVolumeExpansionFailure),
		audienceRestriction:          enabled(ServiceAccountNodeAudienceRestriction),
		podCertificateRequests:       enabled(PodCertificateRequest),
		csiVolumeHealth:              enabled(CSIVolumeHealth),
		insecureKubeletCSRsPermitted: enabled(AllowInsecureKubeletCertificateSigningRequests),
	}
}

// knownFeatureNames lists the names gates can answer for. The read-only
// FeatureGate interface has no lookup, so it asks the richer interfaces the
// component-base implementation offers and falls back to KnownFeatures, whose
// help strings start with "<name>=" (it omits GA gates, which then read as
// their default: the safe answer for a gate it cannot see).
func knownFeatureNames(gates featuregate.FeatureGate) map[featuregate.Feature]struct{} {
	known := map[featuregate.Feature]struct{}{}
	switch g := gates.(type) {
	case nil:
		return known
	case interface {
		GetAllVersioned() map[featuregate.Feature]featuregate.VersionedSpecs
	}:
		for name := range g.GetAllVersioned() {
			known[name] = struct{}{}
		}
		return known
	case interface {
		GetAll() map[featuregate.Feature]featuregate.FeatureSpec
	}:
		for name := range g.GetAll() {
			known[name] = struct{}{}
		}
		return known
	}
	for _, help := range gates.KnownFeatures() {
		if name, _, ok := strings.Cut(help, "="); ok {
			known[featuregate.Feature(name)] = struct{}{}
		}
	}
	return known
}
