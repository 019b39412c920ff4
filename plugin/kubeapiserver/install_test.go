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

package kubeapiserver

import (
	"net/http"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"
)

// newTestServer builds a GenericAPIServer that is never run, delegating to
// delegate, as kube-apiserver's APIs server delegates to the apiextensions
// server.
func newTestServer(t *testing.T, name string, delegate genericapiserver.DelegationTarget, resources *serverstorage.ResourceConfig) (*genericapiserver.GenericAPIServer, genericapiserver.CompletedConfig) {
	t.Helper()
	scheme := runtime.NewScheme()
	AddToScheme(scheme)
	config := genericapiserver.NewConfig(serializer.NewCodecFactory(scheme))
	config.ExternalAddress = "127.0.0.1:6443"
	config.LoopbackClientConfig = &rest.Config{Host: "https://127.0.0.1:6443"}
	config.EffectiveVersion = basecompatibility.NewEffectiveVersionFromString("1.37.2", "", "")
	config.MergedResourceConfig = resources
	completed := config.Complete(nil)
	server, err := completed.New(name, delegate)
	if err != nil {
		t.Fatal(err)
	}
	return server, completed
}

func configuredServer(t *testing.T) *Server {
	t.Helper()
	scheme := runtime.NewScheme()
	AddToScheme(scheme)
	s := New(Options{Scheme: scheme, Codecs: serializer.NewCodecFactory(scheme), ParameterCodec: runtime.NewParameterCodec(scheme)})
	if _, err := s.Configure(&genericapiserver.Config{LoopbackClientConfig: &rest.Config{Host: "https://127.0.0.1:6443"}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// hasHook says whether server already has the post-start hook name: adding
// one again is refused.
func hasHook(server *genericapiserver.GenericAPIServer, name string) bool {
	err := server.AddPostStartHook(name, func(genericapiserver.PostStartHookContext) error { return nil })
	return err != nil && strings.Contains(err.Error(), "already registered")
}

// Install adds the mutator CRDs hook exactly when the apiextensions server
// it delegates to serves customresourcedefinitions, and the roles hook
// always.
func TestInstallHooks(t *testing.T) {
	for _, tc := range []struct {
		name      string
		servesCRD bool
	}{
		{name: "customresourcedefinitions served", servesCRD: true},
		{name: "apiextensions.k8s.io/v1 off", servesCRD: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			apiextensions, _ := newTestServer(t, "apiextensions-apiserver", genericapiserver.NewEmptyDelegate(), serverstorage.NewResourceConfig())
			if tc.servesCRD {
				// What InstallAPIGroup lists for a served version.
				apiextensions.Handler.NonGoRestfulMux.Handle(crdVersionPath, http.NotFoundHandler())
			}
			kube, config := newTestServer(t, "kube-apiserver", apiextensions, ResourceConfig(serverstorage.NewResourceConfig()))
			if err := configuredServer(t).Install(kube, config, []string{"NodeRestriction", "LocationMutator"}); err != nil {
				t.Fatalf("Install: %v", err)
			}
			if !hasHook(kube, PostStartHookBootstrapRoles) {
				t.Errorf("no %s hook", PostStartHookBootstrapRoles)
			}
			if got := hasHook(kube, PostStartHookMutatorCRDs); got != tc.servesCRD {
				t.Errorf("%s hook added: %v, want %v", PostStartHookMutatorCRDs, got, tc.servesCRD)
			}
			// --runtime-config leaves settings.k8s.io off: nothing to inform.
			if hasHook(kube, PostStartHookSettingsInformers) {
				t.Errorf("%s hook added for a group that is not served", PostStartHookSettingsInformers)
			}
		})
	}
}

// A server with PodPreset enabled but settings.k8s.io off would refuse every
// pod create; Install stops it at start-up instead, naming both flags.
func TestInstallRefusesPodPresetWithoutItsAPI(t *testing.T) {
	kube, config := newTestServer(t, "kube-apiserver", genericapiserver.NewEmptyDelegate(), ResourceConfig(serverstorage.NewResourceConfig()))
	err := configuredServer(t).Install(kube, config, []string{"PodPreset"})
	want := "admission plugin PodPreset (--enable-admission-plugins) needs podpresets.settings.k8s.io served, which --runtime-config leaves off: add --runtime-config=settings.k8s.io/v1alpha1=true (with no settings.k8s.io/v1alpha1/podpresets=false), or leave PodPreset out of --enable-admission-plugins"
	if err == nil || err.Error() != want {
		t.Fatalf("Install error = %v, want %s", err, want)
	}
}
