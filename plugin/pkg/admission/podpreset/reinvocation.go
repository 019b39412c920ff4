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

package podpreset

import (
	"k8s.io/apiserver/pkg/admission"
)

// requestRecord is what the plugin has counted and reported for one pod
// create. kube-apiserver runs the mutating plugins a second time on the
// same request when a webhook or a MutatingAdmissionPolicy changed the pod
// after them; that second run applies what matches the pod now (a preset
// selecting a label the policy added), but must not count the pod, a preset
// or a conflict again, nor record a second Event.
type requestRecord struct {
	evaluated bool
	injected  bool
	conflict  bool
	// unenforced is set once the presets in Warn or Audit mode are
	// reported.
	unenforced bool
	// applied holds the presets already counted in presets_applied_total,
	// by their annotation key: kind and name, which stay the same when
	// the preset changes between the two runs.
	applied map[string]bool
}

// recordOf returns the request's record, kept in its reinvocation context
// so that every invocation on the request shares it. Attributes without a
// context get a record of their own, as if each call were a new request.
func recordOf(a admission.Attributes) *requestRecord {
	rc := a.GetReinvocationContext()
	if rc == nil {
		return &requestRecord{}
	}
	if r, ok := rc.Value(PluginName).(*requestRecord); ok {
		return r
	}
	r := &requestRecord{}
	rc.SetValue(PluginName, r)
	return r
}

// firstTime reports whether *seen was still false, and sets it.
func firstTime(seen *bool) bool {
	if *seen {
		return false
	}
	*seen = true
	return true
}

// firstApplied reports whether preset is applied for the first time in
// this request, and remembers it.
func (r *requestRecord) firstApplied(p *preset) bool {
	key := p.annotationKey()
	if r.applied[key] {
		return false
	}
	if r.applied == nil {
		r.applied = map[string]bool{}
	}
	r.applied[key] = true
	return true
}
