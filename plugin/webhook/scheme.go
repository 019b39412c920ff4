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

package webhook

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	settingsinstall "github.com/admitkit/admitkit/apis/settings/install"
)

// NewScheme returns a scheme of the types the plugins see: every built-in
// Kubernetes API version client-go knows, and settings.k8s.io (its
// versioned and internal types, with their conversions). Objects of other
// kinds reach the plugins unstructured, as custom resources do in
// kube-apiserver.
func NewScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	settingsinstall.Install(scheme)
	return scheme
}
