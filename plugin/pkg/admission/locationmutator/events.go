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

package locationmutator

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/admitkit/admitkit/plugin/internal/events"
)

// newEventRecorder returns the sink of the live source's Warning Events,
// which stops when stop closes.
func newEventRecorder(client kubernetes.Interface, stop <-chan struct{}) eventSink {
	recorder := events.NewRecorder(client, "locationmutator-admission", stop)
	return func(obj runtime.Object, reason, message string) {
		recorder.Event(obj, corev1.EventTypeWarning, reason, message)
	}
}
