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

package compilertest

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/openapi"

	"github.com/admitkit/admitkit/plugin/compiler"
)

// NewUpstream is New with apiserver's own mutating.NewPlugin, exactly as
// kube-apiserver registers it, reading its ApplyConfiguration schemas from
// the OpenAPI v3 discovery schemas serves.
func NewUpstream(result compiler.Result, schemas openapi.Client, namespaces ...*corev1.Namespace) (*Runner, error) {
	return start(result, func(plugins *admission.Plugins, _ *runtime.Scheme) { mutating.Register(plugins) },
		func(c *fake.Clientset) kubernetes.Interface { return servingSchemas{Clientset: c, schemas: schemas} }, namespaces)
}

// servingSchemas is the fake clientset, whose discovery has no OpenAPI v3,
// with schemas as its OpenAPI v3.
type servingSchemas struct {
	*fake.Clientset
	schemas openapi.Client
}

func (c servingSchemas) Discovery() discovery.DiscoveryInterfaces {
	return discoveryServingSchemas{FakeDiscovery: c.Clientset.Discovery().(*fakediscovery.FakeDiscovery), schemas: c.schemas}
}

type discoveryServingSchemas struct {
	*fakediscovery.FakeDiscovery
	schemas openapi.Client
}

func (d discoveryServingSchemas) OpenAPIV3() openapi.Client { return d.schemas }
