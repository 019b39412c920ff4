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

// Package installorder_test holds the install to the order its tools
// apply it in, with their own code: Helm's sorting for the chart (the helm
// hack/tools pins), kustomize's as `kubectl apply -k` runs it.
package installorder_test

import (
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// kinds renders the chart with its defaults and returns its objects' kinds
// in the order Helm applies them for ordering.
func kinds(t *testing.T, ordering releaseutil.KindSortOrder) []string {
	t.Helper()
	cmd := exec.Command("go", "tool", "helm", "template", "admitkit", filepath.Join("..", "..", "chart", "admitkit"), "--namespace", "admitkit-system")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	hooks, manifests, err := releaseutil.SortManifests(releaseutil.SplitManifests(string(out)), nil, ordering)
	if err != nil {
		t.Fatal(err)
	}
	if len(hooks) != 0 {
		t.Errorf("the chart has %d hooks, which run outside this order", len(hooks))
	}
	var order []string
	for _, m := range manifests {
		order = append(order, m.Head.Kind)
	}
	return order
}

// before says whether every object of kind a comes before every one of b.
func before(order []string, a, b string) bool {
	lastA := -1
	firstB := len(order)
	for i, k := range order {
		if k == a {
			lastA = i
		}
		if k == b && i < firstB {
			firstB = i
		}
	}
	return lastA >= 0 && firstB < len(order) && lastA < firstB
}

// helm install creates the server's account and configuration before its
// Deployment, so no pod is refused for a missing service account, and the
// webhook configurations last. helm uninstall deletes the webhook
// configurations first, so that no webhook is left which nothing answers:
// Helm deletes one kind at a time, each kind's deletes done before the next
// kind's start (pkg/kube's batchPerform), in this order.
func TestInstallAndUninstallOrder(t *testing.T) {
	install := kinds(t, releaseutil.InstallOrder)
	for _, pair := range [][2]string{
		{"ServiceAccount", "Deployment"}, {"ConfigMap", "Deployment"}, {"ClusterRoleBinding", "Deployment"}, {"RoleBinding", "Deployment"},
		{"Deployment", "MutatingWebhookConfiguration"}, {"Service", "ValidatingWebhookConfiguration"},
	} {
		if !before(install, pair[0], pair[1]) {
			t.Errorf("helm install applies %v: %s not before %s", install, pair[0], pair[1])
		}
	}
	uninstall := kinds(t, releaseutil.UninstallOrder)
	for _, server := range []string{"Service", "Deployment", "ServiceAccount", "ClusterRoleBinding"} {
		for _, webhook := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
			if !before(uninstall, webhook, server) {
				t.Errorf("helm uninstall deletes %v: %s not before %s", uninstall, webhook, server)
			}
		}
	}
	if slices.Contains(uninstall, "CustomResourceDefinition") {
		t.Error("helm uninstall would delete the CRDs, and every preset and mutator with them: they belong in crds/")
	}
}

// `kubectl apply -k hack/manifests` applies what kustomize builds, in the
// order kubectl asks for (kind by kind, "legacy"): the namespace, CRDs and
// service account before the Deployment, the webhook configurations after
// it, and the Deployment's image is the Kustomization's images line.
func TestKustomizeOrder(t *testing.T) {
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy // as kubectl's kustomize visitor
	resources, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), filepath.Join("..", "..", "manifests"))
	if err != nil {
		t.Fatalf("kustomize build hack/manifests: %v", err)
	}
	var order []string
	for _, r := range resources.Resources() {
		order = append(order, r.GetKind())
		if r.GetKind() == "Deployment" {
			images, err := r.GetFieldValue("spec.template.spec.containers[0].image")
			if err != nil || images != "ghcr.io/admitkit/admitkit:v0.1.0" {
				t.Errorf("the Deployment's image %v (%v), want the images line's ghcr.io/admitkit/admitkit:v0.1.0", images, err)
			}
		}
	}
	if order[0] != "Namespace" {
		t.Errorf("kustomize orders %v: the Namespace not first", order)
	}
	for _, pair := range [][2]string{
		{"CustomResourceDefinition", "Deployment"}, {"ServiceAccount", "Deployment"}, {"ConfigMap", "Deployment"},
		{"Deployment", "MutatingWebhookConfiguration"}, {"Deployment", "ValidatingWebhookConfiguration"},
	} {
		if !before(order, pair[0], pair[1]) {
			t.Errorf("kustomize orders %v: %s not before %s", order, pair[0], pair[1])
		}
	}
}
