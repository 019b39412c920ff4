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

package initializer

import (
	"testing"

	"k8s.io/apiserver/pkg/admission"
)

type identityPlugin struct {
	*admission.Handler
	id string
}

func (p *identityPlugin) SetServerIdentity(id string) { p.id = id }

func TestNewServerIdentity(t *testing.T) {
	for _, id := range []string{"apiserver-abc", ""} {
		t.Run(id, func(t *testing.T) {
			p := &identityPlugin{Handler: admission.NewHandler(admission.Create), id: "unset"}
			NewServerIdentity(id).Initialize(p)
			if p.id != id {
				t.Errorf("identity = %q, want %q", p.id, id)
			}
		})
	}
	// A plugin that does not want it is left alone.
	NewServerIdentity("apiserver-abc").Initialize(admission.NewHandler(admission.Create))
}
