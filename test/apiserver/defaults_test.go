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

package apiserver_test

import (
	"fmt"
	"hash/fnv"
	"math/rand"
	"reflect"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"sigs.k8s.io/randfill"

	"github.com/admitkit/admitkit/plugin/webhook/offline/defaults"

	// Every API group kube-apiserver serves, so that legacyscheme holds
	// each one's defaulting functions.
	_ "k8s.io/kubernetes/pkg/apis/admission/install"
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	_ "k8s.io/kubernetes/pkg/apis/apiserverinternal/install"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/authentication/install"
	_ "k8s.io/kubernetes/pkg/apis/authorization/install"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	_ "k8s.io/kubernetes/pkg/apis/certificates/install"
	_ "k8s.io/kubernetes/pkg/apis/coordination/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/discovery/install"
	_ "k8s.io/kubernetes/pkg/apis/events/install"
	_ "k8s.io/kubernetes/pkg/apis/extensions/install"
	_ "k8s.io/kubernetes/pkg/apis/flowcontrol/install"
	_ "k8s.io/kubernetes/pkg/apis/imagepolicy/install"
	_ "k8s.io/kubernetes/pkg/apis/lifecycle/install"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	_ "k8s.io/kubernetes/pkg/apis/node/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
	_ "k8s.io/kubernetes/pkg/apis/storagemigration/install"
)

// defaultsRounds is how many random objects each type is defaulted as.
const defaultsRounds = 300

// TestDefaultsEqualKubeAPIServer fills random objects of every built-in
// type offline knows and defaults each twice: by kube-apiserver's own
// functions (legacyscheme, with the feature gates at their 1.37 defaults)
// and by package defaults. The two must give the same object. A kind the
// package documents as uncovered must instead be left untouched by it, and
// must really be one kube-apiserver defaults, so that the list stays true.
func TestDefaultsEqualKubeAPIServer(t *testing.T) {
	ours := defaults.NewScheme()
	uncovered := map[schema.GroupVersionKind]bool{}
	for _, gvk := range defaults.Uncovered() {
		uncovered[gvk] = true
	}
	for _, gvk := range sortedKinds(ours) {
		t.Run(gvk.String(), func(t *testing.T) {
			kubeDefaults := false
			for round := range defaultsRounds {
				in, err := ours.New(gvk)
				if err != nil {
					t.Fatal(err)
				}
				fillRandom(in, seedOf(gvk, round))
				want, got := in.DeepCopyObject(), in.DeepCopyObject()
				legacyscheme.Scheme.Default(want)
				ours.Default(got)
				if diff := cmp.Diff(in, want, quantities); diff != "" {
					kubeDefaults = true
				}
				if uncovered[gvk] {
					if diff := cmp.Diff(in, got, quantities); diff != "" {
						t.Fatalf("round %d: %s is listed as uncovered but defaults.NewScheme changed it (-in +defaulted):\n%s", round, gvk, diff)
					}
					continue
				}
				if diff := cmp.Diff(want, got, quantities); diff != "" {
					t.Fatalf("round %d: defaults.NewScheme and kube-apiserver default %s differently (-kube +ours):\n%s", round, gvk, diff)
				}
			}
			if uncovered[gvk] && !kubeDefaults {
				t.Errorf("%s is listed as uncovered but kube-apiserver changed none of %d random objects: take it off defaults.Uncovered", gvk, defaultsRounds)
			}
		})
	}
}

// sortedKinds lists the kinds of s that kube-apiserver knows too, in a
// stable order.
func sortedKinds(s *runtime.Scheme) []schema.GroupVersionKind {
	var kinds []schema.GroupVersionKind
	for gvk := range s.AllKnownTypes() {
		if gvk.Version != runtime.APIVersionInternal && legacyscheme.Scheme.Recognizes(gvk) {
			kinds = append(kinds, gvk)
		}
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i].String() < kinds[j].String() })
	return kinds
}

func seedOf(gvk schema.GroupVersionKind, round int) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", gvk, round)
	return int64(h.Sum64())
}

// quantities compares quantities by value and by how they print, the two
// things a stored object shows of them.
var quantities = cmp.Comparer(func(a, b resource.Quantity) bool {
	return a.Cmp(b) == 0 && a.String() == b.String()
})

// fillRandom fills obj at random, leaving about half of the optional
// fields unset so that defaults fire, then sets many strings to values the
// defaulting rules look for.
func fillRandom(obj runtime.Object, seed int64) {
	r := rand.New(rand.NewSource(seed))
	randfill.New().RandSource(r).NilChance(0.5).NumElements(0, 2).MaxDepth(12).
		Funcs(func(q *resource.Quantity, c randfill.Continue) {
			*q = resource.MustParse(quantityWords[c.Intn(len(quantityWords))])
		}).
		Fill(obj)
	pickStrings(reflect.ValueOf(obj), r)
}

// quantityWords include values finer than a milli-unit, which kube rounds
// up, and binary and decimal suffixes.
var quantityWords = []string{"0", "1", "100m", "0.0001", "1.5", "2.0000001", "1Gi", "512Mi", "1e3", "250m", "3"}

// stringWords are values that defaulting rules compare strings with: the
// empty string, enum values of the built-in types, and image references
// with and without tag or digest, valid and not.
var stringWords = []string{
	"",
	// apps, batch, core, networking, rbac, storage... enum values
	"RollingUpdate", "Recreate", "OnDelete", "OrderedReady", "Parallel", "Retain", "Delete",
	"ClientIP", "None", "ClusterIP", "NodePort", "LoadBalancer", "ExternalName", "Cluster", "Local",
	"Container", "Pod", "PersistentVolumeClaim", "ServiceAccount", "User", "Group",
	"Always", "IfNotPresent", "Never", "OnFailure", "TCP", "UDP", "SCTP",
	"Indexed", "NonIndexed", "Failed", "TerminatingOrFailed", "Allow", "Forbid", "Replace",
	"Ingress", "Egress", "Namespace", "ExactCount", "All", "Equal", "Exists",
	"Limited", "Exempt", "Queue", "Reject", "Fail", "Ignore", "Exact", "Equivalent", "IfNeeded",
	"rbac.authorization.k8s.io", "v1", "10.0.0.1", "fd00::1",
	// images
	"nginx", "nginx:latest", "nginx:1.27", "registry.example:5000/team/app:latest", "Nginx:latest",
	"busybox@sha256:" + hex64, "busybox:latest@sha256:" + hex64, "busybox@sha512:" + hex64, hex64,
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// pickStrings walks v and replaces about half of the settable strings it
// finds, of any named string type, with one of stringWords.
func pickStrings(v reflect.Value, r *rand.Rand) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			pickStrings(v.Elem(), r)
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[resource.Quantity]() {
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				pickStrings(v.Field(i), r)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			pickStrings(v.Index(i), r)
		}
	case reflect.String:
		if v.CanSet() && r.Intn(2) == 0 {
			v.SetString(stringWords[r.Intn(len(stringWords))])
		}
	}
}
