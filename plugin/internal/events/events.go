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

// Package events starts the Event recorder an admission plugin reports
// through. Plugins record Events from inside the apiserver, through its
// loopback client, and must stop doing so when the server drains; every
// plugin of the module wires its recorder here so that the wiring (the
// broadcaster, the sink, the shutdown) is written once.
package events

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// NewRecorder returns a recorder that writes Events through client with
// component as their source. Its broadcaster, and the goroutine that
// watches stop for it, end when stop closes.
func NewRecorder(client kubernetes.Interface, component string, stop <-chan struct{}) record.EventRecorder {
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
	go func() {
		<-stop
		broadcaster.Shutdown()
	}()
	return recorder
}
