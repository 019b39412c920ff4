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
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"

	"github.com/admitkit/admitkit/plugin/noderestrictiontest"
)

// BenchmarkNodeRestriction runs each hot request, on internal objects, through upstream's plugin
// and ours, one after the other in the same process, so that the ratio is
// not skewed by whatever else the machine is doing between runs.
func BenchmarkNodeRestriction(b *testing.B) {
	p := newPlugins(b, storedPod(), storedNode())
	ctx := context.Background()
	for _, s := range hotShapes(b) {
		b.Run(s.name, func(b *testing.B) {
			b.Run("upstream", func(b *testing.B) {
				run(b, s.attrs, func(a admission.Attributes) error { return p.upstream.Admit(ctx, a, objectInterfaces) })
			})
			b.Run("admitkit", func(b *testing.B) {
				run(b, s.attrs, func(a admission.Attributes) error { return p.admitkit.Validate(ctx, a, objectInterfaces) })
			})
		})
	}
	// The yardstick for the kubelet requests: what converting one whole
	// internal pod to v1 costs in the same run.
	b.Run("baseline-pod-conversion", func(b *testing.B) {
		pod := internal[api.Pod](b, storedPod())
		b.ReportAllocs()
		for b.Loop() {
			if err := legacyscheme.Scheme.Convert(pod, &corev1.Pod{}, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkNodeDaemons puts a node-scoped daemon's requests beside the
// kubelet's same requests, and other users' requests to a plugin with
// daemons configured beside upstream's, in one run.
func BenchmarkNodeDaemons(b *testing.B) {
	p := newPlugins(b, storedPod(), storedNode())
	ctx := context.Background()
	daemon := noderestrictiontest.DaemonUser("kube-system", "agent", "mynode")
	for _, s := range hotShapes(b) {
		switch s.name {
		case "non-node-request":
			b.Run(s.name, func(b *testing.B) {
				b.Run("upstream", func(b *testing.B) {
					run(b, s.attrs, func(a admission.Attributes) error { return p.upstream.Admit(ctx, a, objectInterfaces) })
				})
				b.Run("admitkit-daemons-configured", func(b *testing.B) {
					run(b, s.attrs, func(a admission.Attributes) error { return p.daemons.Validate(ctx, a, objectInterfaces) })
				})
			})
		case "node-label-update", "node-status-update", "pod-status-update":
			asDaemon := admission.NewAttributesRecord(s.attrs.GetObject(), s.attrs.GetOldObject(), s.attrs.GetKind(), s.attrs.GetNamespace(), s.attrs.GetName(),
				s.attrs.GetResource(), s.attrs.GetSubresource(), s.attrs.GetOperation(), s.attrs.GetOperationOptions(), false, daemon)
			b.Run(s.name, func(b *testing.B) {
				b.Run("admitkit-kubelet", func(b *testing.B) {
					run(b, s.attrs, func(a admission.Attributes) error { return p.daemons.Validate(ctx, a, objectInterfaces) })
				})
				b.Run("admitkit-daemon", func(b *testing.B) {
					run(b, asDaemon, func(a admission.Attributes) error { return p.daemons.Validate(ctx, a, objectInterfaces) })
				})
			})
		}
	}
}

func run(b *testing.B, attrs admission.Attributes, check func(admission.Attributes) error) {
	b.Helper()
	if err := check(attrs); err != nil {
		b.Fatalf("the benchmarked request must be allowed: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = check(attrs)
	}
}
