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

package initializer

import (
	"k8s.io/apiserver/pkg/admission"
)

// WantsServerIdentity is implemented by plugins that write status keyed by
// the kube-apiserver they run in, so that several apiservers sharing one
// etcd each keep their own entry.
type WantsServerIdentity interface {
	SetServerIdentity(id string)
}

type identityInitializer string

var _ admission.PluginInitializer = identityInitializer("")

// NewServerIdentity returns an initializer that gives id to every plugin
// that wants it. Pass the server's genericapiserver.Config.APIServerID, the
// name of its identity lease, so that a plugin's status entries and the
// server's lease read the same.
func NewServerIdentity(id string) admission.PluginInitializer {
	return identityInitializer(id)
}

// Initialize hands the identity to plugin if it wants it.
func (id identityInitializer) Initialize(plugin admission.Interface) {
	if wants, ok := plugin.(WantsServerIdentity); ok {
		wants.SetServerIdentity(string(id))
	}
}
