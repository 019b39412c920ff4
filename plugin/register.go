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

// Package plugin registers admitkit's admission plugins with a kube-apiserver
// admission registry and says where they belong in the plugin order.
package plugin

import (
	"k8s.io/apiserver/pkg/admission"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator"
	"github.com/admitkit/admitkit/plugin/pkg/admission/noderestriction"
	"github.com/admitkit/admitkit/plugin/pkg/admission/podpreset"
)

// RegisterAllAdmissionPlugins registers every admitkit plugin under its
// PluginName. A fork calls it on the registry that holds the upstream
// plugins. admission.Plugins cannot unregister a name and exits on a name
// registered twice, so such a registry is built by calling each upstream
// plugin package's Register except NodeRestriction's, not with
// kube-apiserver's RegisterAllAdmissionPlugins (test/apiserver does this).
// A server that does not link k8s.io/kubernetes also calls
// noderestriction.AddFeatureGates on its feature gate, so that
// NodeRestriction's gates can be set by flag.
func RegisterAllAdmissionPlugins(plugins *admission.Plugins) {
	podpreset.Register(plugins)
	noderestriction.Register(plugins)
	locationmutator.Register(plugins)
}

// AllOrderedPlugins is Kubernetes 1.37's recommended admission order with
// admitkit's plugins in their places: PodPreset before LimitRanger and
// ServiceAccount (presets merge before the token volume is added),
// NodeRestriction where upstream has it, right after ServiceAccount, and
// LocationMutator just before MutatingAdmissionPolicy, so that it runs after
// every in-tree defaulting plugin and before webhooks.
var AllOrderedPlugins = []string{
	"AlwaysAdmit",
	"NamespaceAutoProvision",
	"NamespaceLifecycle",
	"NamespaceExists",
	"LimitPodHardAntiAffinityTopology",
	"PodPreset",
	"LimitRanger",
	"ServiceAccount",
	"NodeRestriction",
	"TaintNodesByCondition",
	"AlwaysPullImages",
	"ImagePolicyWebhook",
	"PodSecurity",
	"PodNodeSelector",
	"Priority",
	"DefaultTolerationSeconds",
	"PodTolerationRestriction",
	"EventRateLimit",
	"ExtendedResourceToleration",
	"DefaultStorageClass",
	"StorageObjectInUseProtection",
	"PodGroupProtection",
	"OwnerReferencesPermissionEnforcement",
	"PersistentVolumeClaimResize",
	"RuntimeClass",
	"CertificateApproval",
	"CertificateSigning",
	"ClusterTrustBundleAttest",
	"CertificateSubjectRestriction",
	"DefaultIngressClass",
	"DenyServiceExternalIPs",
	"PodTopologyLabels",
	"NodeDeclaredFeatureValidator",
	"PodResizeValidator",
	"LocationMutator",
	"MutatingAdmissionPolicy",
	"MutatingAdmissionWebhook",
	"ValidatingAdmissionPolicy",
	"ValidatingAdmissionWebhook",
	"ResourceQuota",
	"AlwaysDeny",
}
