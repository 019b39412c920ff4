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

// Package bootstrappolicy holds the RBAC roles that give namespace users
// access to PodPresets the way kube-apiserver's bootstrap policy gives them
// access to its own namespaced resources: through ClusterRoles aggregated
// into the admin, edit and view roles. ClusterPodPresets get none: a preset
// that reaches into every namespace is for cluster administrators only.
//
// ClusterRoles is the one definition; hack/manifests/podpreset-clusterroles.yaml
// is generated from it for clusters that apply manifests, and Reconcile
// creates or updates the roles from a server's post-start hook.
package bootstrappolicy

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

const (
	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	aggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

var (
	readVerbs  = []string{"get", "list", "watch"}
	writeVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
)

// ClusterRoles returns the roles, each labelled to aggregate into one of
// the default admin, edit and view ClusterRoles.
func ClusterRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		podPresetRole("admitkit:podpresets:aggregate-to-admin", aggregateToAdmin, writeVerbs),
		podPresetRole("admitkit:podpresets:aggregate-to-edit", aggregateToEdit, writeVerbs),
		podPresetRole("admitkit:podpresets:aggregate-to-view", aggregateToView, readVerbs),
	}
}

func podPresetRole(name, aggregateTo string, verbs []string) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{
		TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{aggregateTo: "true"},
		},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{settingsv1alpha1.GroupName},
			Resources: []string{"podpresets"},
			Verbs:     append([]string(nil), verbs...),
		}},
	}
}

// Reconcile creates the roles that are missing and puts back the labels
// and rules of those that were changed, leaving other labels and
// annotations alone. It is safe to run from several servers at once: a
// write that loses a race fails with a conflict or an AlreadyExists error,
// and the caller retries.
func Reconcile(ctx context.Context, client rbacv1client.ClusterRolesGetter) error {
	for _, want := range ClusterRoles() {
		have, err := client.ClusterRoles().Get(ctx, want.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if _, err := client.ClusterRoles().Create(ctx, &want, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating ClusterRole %s: %w", want.Name, err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("reading ClusterRole %s: %w", want.Name, err)
		}
		updated := have.DeepCopy()
		if updated.Labels == nil {
			updated.Labels = map[string]string{}
		}
		for k, v := range want.Labels {
			updated.Labels[k] = v
		}
		updated.Rules = want.Rules
		if equality.Semantic.DeepEqual(have, updated) {
			continue
		}
		if _, err := client.ClusterRoles().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating ClusterRole %s: %w", want.Name, err)
		}
	}
	return nil
}
