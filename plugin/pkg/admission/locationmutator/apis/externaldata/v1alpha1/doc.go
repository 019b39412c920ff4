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

// Package v1alpha1 declares the Provider at externaldata.gatekeeper.sh/v1alpha1,
// the deprecated version Gatekeeper still serves. The object has exactly the
// v1beta1 shape, so it reuses v1beta1's spec and status. Only controller-gen
// reads this package.
//
// +groupName=externaldata.gatekeeper.sh
package v1alpha1
