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

// Package registrytest gives the registry's tests real etcd storage: an
// embedded etcd server and the RESTOptions a server would hand a store,
// storing settings.k8s.io objects as v1alpha1 JSON as kube-apiserver does.
package registrytest

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/registry/generic"
	etcd3testing "k8s.io/apiserver/pkg/storage/etcd3/testing"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/admitkit/admitkit/apis/settings/install"
	"github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

// Scheme holds settings.k8s.io, internal and v1alpha1.
var Scheme = runtime.NewScheme()

func init() {
	install.Install(Scheme)
	metav1.AddToGroupVersion(Scheme, metav1.SchemeGroupVersion)
	metav1.AddToGroupVersion(Scheme, v1alpha1.SchemeGroupVersion)
}

// NewRESTOptionsGetter starts an etcd server that lives as long as the test
// and returns a getter that gives each resource its own prefix in it.
func NewRESTOptionsGetter(t *testing.T) generic.RESTOptionsGetter {
	t.Helper()
	server, config := etcd3testing.NewUnsecuredEtcd3TestClientServer(t)
	t.Cleanup(func() { server.Terminate(t) })
	config.Codec = serializer.NewCodecFactory(Scheme).LegacyCodec(v1alpha1.SchemeGroupVersion)
	config.EncodeVersioner = v1alpha1.SchemeGroupVersion
	return optionsGetter{config}
}

type optionsGetter struct{ config *storagebackend.Config }

func (g optionsGetter) GetRESTOptions(resource schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	return generic.RESTOptions{
		StorageConfig:           g.config.ForResource(resource),
		Decorator:               generic.UndecoratedStorage,
		DeleteCollectionWorkers: 1,
		ResourcePrefix:          resource.Resource,
	}, nil
}
