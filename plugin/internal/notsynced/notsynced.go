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

// Package notsynced holds the refusal a plugin answers while the API
// objects it acts on are not read yet: admitting the request then could
// silently leave out what a user has applied, so the request is refused
// with an error clients retry on their own (503 with Retry-After).
package notsynced

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// retryAfterSeconds is the Retry-After a refusal carries: a first list
// completes within about a second of the server starting to serve.
const retryAfterSeconds = 1

// Error returns the 503 Service Unavailable with message, which tells
// clients to retry after retryAfterSeconds.
func Error(message string) *apierrors.StatusError {
	err := apierrors.NewServiceUnavailable(message)
	err.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: retryAfterSeconds}
	return err
}
