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

package notsynced

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestErrorIsRetriable(t *testing.T) {
	err := Error("not read yet")
	if !apierrors.IsServiceUnavailable(err) {
		t.Errorf("%v is not a 503", err)
	}
	if seconds, ok := apierrors.SuggestsClientDelay(err); !ok || seconds != retryAfterSeconds {
		t.Errorf("Retry-After %d (%v), want %d", seconds, ok, retryAfterSeconds)
	}
	if err.Error() != "not read yet" {
		t.Errorf("message %q", err.Error())
	}
}
