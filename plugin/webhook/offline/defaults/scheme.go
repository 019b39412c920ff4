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
	"reflect"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// NewScheme returns a scheme holding every built-in type client-go knows,
// with the defaulting functions of the kinds this package covers (see the
// package documentation). Its Default method gives an object the fields
// kube-apiserver would default when decoding it.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	// AddToScheme only registers types: on a fresh scheme it fails only on
	// a programming error in client-go, as webhook.NewScheme also takes it.
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	withoutDefaults(s)
	addCore(s)
	addApps(s)
	addBatch(s)
	addAutoscaling(s)
	addNetworking(s)
	addDiscovery(s)
	addRBAC(s)
	addStorage(s)
	addScheduling(s)
	addFlowcontrol(s)
	addAdmissionregistration(s)
	addCertificates(s)
	addAuthentication(s)
	addResource(s)
	return s
}

// withoutDefaults gives every type of s a defaulting function that does
// nothing. The k8s.io/api scheme builders that AddToScheme runs are shared
// by the whole program, and a program that links k8s.io/kubernetes (the
// test module does) has appended kube's own defaulting functions to them:
// without this, those would fill the kinds this package leaves uncovered,
// and what NewScheme does would depend on what else is linked.
func withoutDefaults(s *runtime.Scheme) {
	for _, typ := range s.AllKnownTypes() {
		if obj, ok := reflect.New(typ).Interface().(runtime.Object); ok {
			s.AddTypeDefaultingFunc(obj, func(any) {})
		}
	}
}

// add registers f as the defaulting function of T.
func add[T runtime.Object](s *runtime.Scheme, f func(T)) {
	var zero T
	s.AddTypeDefaultingFunc(zero, func(obj any) { f(obj.(T)) })
}

// eachItem makes a list's defaulting function from its items'.
func eachItem[L any, T any](items func(L) []T, f func(*T)) func(L) {
	return func(list L) {
		it := items(list)
		for i := range it {
			f(&it[i])
		}
	}
}
