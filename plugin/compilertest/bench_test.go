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

package compilertest_test

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission"

	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/compilertest"
)

var benchResult = compiler.Result{
	MutatingPolicies: []admissionregistrationv1.MutatingAdmissionPolicy{mutatingPolicy("always-pull", applyConfiguration(alwaysPull))},
	MutatingBindings: []admissionregistrationv1.MutatingAdmissionPolicyBinding{mutatingBinding("always-pull")},
}

// BenchmarkNew is what a test pays per Runner: starting it, its first
// admission (which waits for the plugins to be ready) and closing it.
func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		r, err := compilertest.New(benchResult, namespace("default", nil))
		if err != nil {
			b.Fatal(err)
		}
		if _, _, _, err := r.Admit(context.Background(), pod(nil), admission.Create, "default"); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}

// BenchmarkAdmit is one pod create through a ready Runner.
func BenchmarkAdmit(b *testing.B) {
	r, err := compilertest.New(benchResult, namespace("default", nil))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for b.Loop() {
		if _, _, _, err := r.Admit(context.Background(), pod(nil), admission.Create, "default"); err != nil {
			b.Fatal(err)
		}
	}
}
