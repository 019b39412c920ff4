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
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	eventrecord "k8s.io/client-go/tools/record"
)

// newEventRecorder returns the sink of the live source's Warning Events,
// which stops when stop closes.
func newEventRecorder(client kubernetes.Interface, stop <-chan struct{}) eventSink {
	broadcaster := eventrecord.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "locationmutator-admission"})
	go func() {
		<-stop
		broadcaster.Shutdown()
	}()
	return func(obj runtime.Object, reason, message string) {
		recorder.Event(obj, corev1.EventTypeWarning, reason, message)
	}
}
