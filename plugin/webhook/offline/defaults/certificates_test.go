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
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
)

func TestRequestDefaults(t *testing.T) {
	if got := defaulted(t, &certificatesv1.PodCertificateRequest{}).Spec.MaxExpirationSeconds; got == nil || *got != 86400 {
		t.Errorf("pod certificate maxExpirationSeconds = %v, want 86400", got)
	}
	if got := defaulted(t, &authenticationv1.TokenRequest{}).Spec.ExpirationSeconds; got == nil || *got != 3600 {
		t.Errorf("token expirationSeconds = %v, want 3600", got)
	}
}
