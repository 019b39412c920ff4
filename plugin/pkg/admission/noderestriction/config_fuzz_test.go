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

package noderestriction

import (
	"bytes"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
)

// FuzzLoadConfiguration: whatever the bytes, loading must not panic; a
// configuration it accepts must build a plugin whose allowances, the
// kubelets' and every daemon's, never reach a node-restriction.kubernetes.io
// label, and that holds every account it lists.
func FuzzLoadConfiguration(f *testing.F) {
	const head = "apiVersion: noderestriction.admission.admitkit.io/v1alpha1\nkind: Configuration\n"
	f.Add([]byte(head + daemons))
	f.Add([]byte(head + "allowedLabelPrefixes: [node-restriction.kubernetes.io]\n"))
	f.Add([]byte(head + "nodeScopedServiceAccounts: [{namespace: a, name: b, allowedLabelPrefixes: [kubernetes.io/]}, {namespace: a, name: b}]\n"))
	f.Add([]byte(`{"apiVersion":"noderestriction.admission.admitkit.io/v1alpha1","kind":"Configuration","nodeScopedServiceAccounts":[{"namespace":"x","name":"y","allowedLabels":["k8s.io/z"]}]}`))
	f.Add([]byte("nodeScopedServiceAccounts: {}\n"))

	reserved := sets.New("node-restriction.kubernetes.io/trusted", "team.node-restriction.kubernetes.io/trusted")
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := LoadConfiguration(bytes.NewReader(data))
		if err != nil || cfg == nil {
			return
		}
		if errs := cfg.Validate(); len(errs) > 0 {
			t.Fatalf("an accepted configuration does not validate: %v", errs)
		}
		p, err := NewPlugin(NewDefaultNodeIdentifier(), cfg)
		if err != nil {
			t.Fatalf("an accepted configuration builds no plugin: %v", err)
		}
		if got := p.allow.forbiddenLabels(reserved); len(got) != reserved.Len() {
			t.Fatalf("kubelets may set reserved labels: only %v are forbidden", got)
		}
		for _, sa := range cfg.NodeScopedServiceAccounts {
			acct := p.scopedAccountOf(&user.DefaultInfo{Name: serviceaccount.MakeUsername(sa.Namespace, sa.Name)})
			if acct == nil {
				t.Fatalf("service account %s/%s is listed but not held to its node", sa.Namespace, sa.Name)
			}
			if got := acct.allow.forbiddenLabels(reserved); len(got) != reserved.Len() {
				t.Fatalf("service account %s may set reserved labels: only %v are forbidden", acct.name, got)
			}
		}
	})
}
