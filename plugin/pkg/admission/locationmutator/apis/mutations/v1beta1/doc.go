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

// Package v1beta1 declares Assign, AssignMetadata and ModifySet at
// mutations.gatekeeper.sh/v1beta1, a version Gatekeeper still serves. The
// objects have exactly the v1 shape, so the kinds reuse v1's spec and status.
// Only controller-gen reads this package.
//
// +groupName=mutations.gatekeeper.sh
package v1beta1
