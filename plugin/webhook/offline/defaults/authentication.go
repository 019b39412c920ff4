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

package defaults

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func addAuthentication(s *runtime.Scheme) {
	add(s, tokenRequest)
}

// tokenRequest asks for an hour-long token unless told otherwise.
func tokenRequest(r *authenticationv1.TokenRequest) {
	if r.Spec.ExpirationSeconds == nil {
		r.Spec.ExpirationSeconds = ptr.To[int64](3600)
	}
}
