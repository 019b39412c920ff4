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

package apiserver

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	"k8s.io/kubernetes/plugin/pkg/admission/admit"
	"k8s.io/kubernetes/plugin/pkg/admission/alwayspullimages"
	"k8s.io/kubernetes/plugin/pkg/admission/antiaffinity"
	certapproval "k8s.io/kubernetes/plugin/pkg/admission/certificates/approval"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/ctbattest"
	certsigning "k8s.io/kubernetes/plugin/pkg/admission/certificates/signing"
	certsubjectrestriction "k8s.io/kubernetes/plugin/pkg/admission/certificates/subjectrestriction"
	"k8s.io/kubernetes/plugin/pkg/admission/defaulttolerationseconds"
	"k8s.io/kubernetes/plugin/pkg/admission/deny"
	"k8s.io/kubernetes/plugin/pkg/admission/eventratelimit"
	"k8s.io/kubernetes/plugin/pkg/admission/extendedresourcetoleration"
	"k8s.io/kubernetes/plugin/pkg/admission/gc"
	"k8s.io/kubernetes/plugin/pkg/admission/imagepolicy"
	"k8s.io/kubernetes/plugin/pkg/admission/limitranger"
	"k8s.io/kubernetes/plugin/pkg/admission/namespace/autoprovision"
	"k8s.io/kubernetes/plugin/pkg/admission/namespace/exists"
	"k8s.io/kubernetes/plugin/pkg/admission/network/defaultingressclass"
	"k8s.io/kubernetes/plugin/pkg/admission/network/denyserviceexternalips"
	"k8s.io/kubernetes/plugin/pkg/admission/nodedeclaredfeatures"
	"k8s.io/kubernetes/plugin/pkg/admission/nodetaint"
	"k8s.io/kubernetes/plugin/pkg/admission/podnodeselector"
	"k8s.io/kubernetes/plugin/pkg/admission/podresize"
	"k8s.io/kubernetes/plugin/pkg/admission/podtolerationrestriction"
	"k8s.io/kubernetes/plugin/pkg/admission/podtopologylabels"
	podpriority "k8s.io/kubernetes/plugin/pkg/admission/priority"
	"k8s.io/kubernetes/plugin/pkg/admission/runtimeclass"
	"k8s.io/kubernetes/plugin/pkg/admission/scheduling/podgroupprotection"
	"k8s.io/kubernetes/plugin/pkg/admission/security/podsecurity"
	"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/persistentvolume/resize"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageclass/setdefault"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageobjectinuseprotection"

	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"

	"github.com/admitkit/admitkit/plugin"
)

// registerUpstreamPlugins registers kube-apiserver's in-tree plugins except
// NodeRestriction, whose name admitkit takes over. admission.Plugins can
// neither remove nor re-register a name, so a fork has to list the packages
// itself instead of calling kubeoptions.RegisterAllAdmissionPlugins;
// TestUpstreamRegistryDrift keeps this list equal to upstream's.
func registerUpstreamPlugins(plugins *admission.Plugins) {
	admit.Register(plugins)
	alwayspullimages.Register(plugins)
	antiaffinity.Register(plugins)
	defaulttolerationseconds.Register(plugins)
	defaultingressclass.Register(plugins)
	denyserviceexternalips.Register(plugins)
	deny.Register(plugins)
	eventratelimit.Register(plugins)
	extendedresourcetoleration.Register(plugins)
	gc.Register(plugins)
	imagepolicy.Register(plugins)
	limitranger.Register(plugins)
	autoprovision.Register(plugins)
	exists.Register(plugins)
	nodetaint.Register(plugins)
	podnodeselector.Register(plugins)
	podtolerationrestriction.Register(plugins)
	runtimeclass.Register(plugins)
	resourcequota.Register(plugins)
	podsecurity.Register(plugins)
	podpriority.Register(plugins)
	serviceaccount.Register(plugins)
	setdefault.Register(plugins)
	resize.Register(plugins)
	storageobjectinuseprotection.Register(plugins)
	podgroupprotection.Register(plugins)
	certapproval.Register(plugins)
	certsigning.Register(plugins)
	ctbattest.Register(plugins)
	certsubjectrestriction.Register(plugins)
	podtopologylabels.Register(plugins)
	nodedeclaredfeatures.Register(plugins)
	podresize.Register(plugins)
}

// admitkitPluginNames lists the names admitkit serves; upstream has only
// NodeRestriction among them.
var admitkitPluginNames = []string{"PodPreset", "NodeRestriction", "LocationMutator"}

// configureAdmission replaces kube-apiserver's admission registry with one
// holding upstream's plugins (without upstream NodeRestriction) and
// admitkit's, ordered by plugin.AllOrderedPlugins.
//
// Only names that are registered go into the order, because the generic
// options reject an order naming unregistered plugins: this way the server
// builds whichever of admitkit's plugins plugin.RegisterAllAdmissionPlugins
// provides today. admitkit's plugins are off unless enabled, as upstream
// NodeRestriction is.
func configureAdmission(a *genericoptions.AdmissionOptions) {
	plugins := genericoptions.NewAdmissionOptions().Plugins // the generic ones: lifecycle, webhooks, policies
	registerUpstreamPlugins(plugins)
	plugin.RegisterAllAdmissionPlugins(plugins)
	a.Plugins = plugins

	registered := sets.New(plugins.Registered()...)
	order := make([]string, 0, len(plugin.AllOrderedPlugins))
	for _, name := range plugin.AllOrderedPlugins {
		if registered.Has(name) {
			order = append(order, name)
		}
	}
	a.RecommendedPluginOrder = order
	a.DefaultOffPlugins = kubeoptions.DefaultOffAdmissionPlugins().Insert(admitkitPluginNames...)
}

// AdmitkitPlugins returns the admitkit plugin names this build registers:
// the ones plugin.RegisterAllAdmissionPlugins provides today.
func AdmitkitPlugins() []string {
	plugins := admission.NewPlugins()
	plugin.RegisterAllAdmissionPlugins(plugins)
	return plugins.Registered()
}
