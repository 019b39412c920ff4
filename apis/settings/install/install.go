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

// Package install adds settings.k8s.io, internal and v1alpha1, to a scheme.
package install

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/admitkit/admitkit/apis/settings"
	"github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

// Install registers the internal and v1alpha1 types of settings.k8s.io,
// with their conversions and defaulters, and makes v1alpha1 the preferred
// version.
func Install(scheme *runtime.Scheme) {
	utilruntime.Must(settings.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(scheme.SetVersionPriority(v1alpha1.SchemeGroupVersion))
}
