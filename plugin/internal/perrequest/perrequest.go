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

// Package perrequest keeps what a plugin has counted and reported for one
// admission request. kube-apiserver runs the mutating plugins a second time
// on the same request when a webhook or a MutatingAdmissionPolicy changed
// the object after them; that second run mutates what applies to the
// object now, but must not count the request, add an audit annotation that
// is already there (an annotation cannot change once added) or send a
// warning or an Event a second time. The record lives in the request's
// ReinvocationContext, which every invocation on the request shares.
package perrequest

import "k8s.io/apiserver/pkg/admission"

// Record returns the request's record of type T under key (the plugin's
// name), made on the first call. Attributes without a reinvocation
// context get a new record on every call, as if each were a new request.
func Record[T any](a admission.Attributes, key string) *T {
	rc := a.GetReinvocationContext()
	if rc == nil {
		return new(T)
	}
	if r, ok := rc.Value(key).(*T); ok {
		return r
	}
	r := new(T)
	rc.SetValue(key, r)
	return r
}

// Once is a thing done once per request, in a record.
type Once struct{ done bool }

// First reports whether this is the first time, and notes that it is done.
func (o *Once) First() bool {
	if o.done {
		return false
	}
	o.done = true
	return true
}

// Done reports whether an earlier invocation did it.
func (o *Once) Done() bool { return o.done }

// OncePer is a thing done once per request for each of several keys (a
// counter per preset).
type OncePer struct{ done map[string]bool }

// First reports whether this is the first time for key, and notes that
// it is done.
func (o *OncePer) First(key string) bool {
	if o.done[key] {
		return false
	}
	if o.done == nil {
		o.done = map[string]bool{}
	}
	o.done[key] = true
	return true
}
