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

package kubeapiserver_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/resourceconfig"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/admitkit/admitkit/plugin/kubeapiserver"
	settingsrest "github.com/admitkit/admitkit/registry/settings/rest"
)

// kube-apiserver's default resource config knows settings.k8s.io/v1alpha1
// once ResourceConfig has entered it, off; --runtime-config turns it on.
func ExampleResourceConfig() {
	scheme := runtime.NewScheme()
	kubeapiserver.AddToScheme(scheme) // a fork passes legacyscheme.Scheme, from an init function
	defaults := kubeapiserver.ResourceConfig(serverstorage.NewResourceConfig())
	fmt.Println("by default:", defaults.ResourceEnabled(settingsrest.PodPresets))

	flags := cliflag.ConfigurationMap{"settings.k8s.io/v1alpha1": "true"} // --runtime-config
	merged, err := resourceconfig.MergeAPIResourceConfigs(defaults, flags, scheme)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("with --runtime-config:", merged.ResourceEnabled(settingsrest.PodPresets))
	// Output:
	// by default: false
	// with --runtime-config: true
}

// The merged definitions hold kube-apiserver's and settings.k8s.io's models;
// the settings models keep the names the removed in-tree API had.
func ExampleOpenAPIDefinitions() {
	kube := func(openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
		return map[string]openapicommon.OpenAPIDefinition{"io.k8s.api.core.v1.Pod": {}}
	}
	defs := kubeapiserver.OpenAPIDefinitions(kube)(func(path string) spec.Ref { return spec.MustCreateRef(path) })
	for _, name := range []string{"io.k8s.api.core.v1.Pod", "io.k8s.api.settings.v1alpha1.PodPreset", "io.k8s.api.settings.v1alpha1.ClusterPodPreset"} {
		_, ok := defs[name]
		fmt.Println(name, ok)
	}
	// Output:
	// io.k8s.api.core.v1.Pod true
	// io.k8s.api.settings.v1alpha1.PodPreset true
	// io.k8s.api.settings.v1alpha1.ClusterPodPreset true
}

// In a fork's NewConfig: New before BuildGenericConfig, Configure after it.
// Its initializers join kube-apiserver's own admission initializers.
func ExampleServer_Configure() {
	scheme := runtime.NewScheme() // a fork passes legacyscheme.Scheme, Codecs and ParameterCodec
	admitkit := kubeapiserver.New(kubeapiserver.Options{
		Scheme:         scheme,
		Codecs:         serializer.NewCodecFactory(scheme),
		ParameterCodec: runtime.NewParameterCodec(scheme),
	})

	// What BuildGenericConfig returns, reduced to what Configure reads.
	config := &genericapiserver.Config{
		LoopbackClientConfig: &rest.Config{Host: "https://127.0.0.1:6443"},
		APIServerID:          "kube-apiserver-a",
	}
	initializers, err := admitkit.Configure(config)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(initializers), "initializers")
	// Output:
	// 2 initializers
}
