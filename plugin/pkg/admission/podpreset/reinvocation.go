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

	"github.com/admitkit/admitkit/plugin/internal/perrequest"
)

// requestRecord is what the plugin has counted and reported for one pod
// create. When kube-apiserver reinvokes the plugin, the second run applies
// what matches the pod now (a preset selecting a label a policy added),
// but must not count the pod, a preset or a conflict again, nor record a
// second Event or audit annotation.
type requestRecord struct {
	evaluated, injected, conflict perrequest.Once
	// unenforced is done once the presets in Warn or Audit mode are
	// reported.
	unenforced perrequest.Once
	// applied holds the presets already counted in presets_applied_total,
	// by their annotation key: kind and name, which stay the same when
	// the preset changes between the two runs.
	applied perrequest.OncePer
}

func recordOf(a admission.Attributes) *requestRecord {
	return perrequest.Record[requestRecord](a, PluginName)
}
