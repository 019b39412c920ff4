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

package defaults

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
)

func TestRoleBindingDefaults(t *testing.T) {
	b := defaulted(t, &rbacv1.RoleBinding{
		RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.UserKind, Name: "alice"},
			{Kind: rbacv1.GroupKind, Name: "devs"},
			{Kind: rbacv1.ServiceAccountKind, Name: "sa", Namespace: "ns"},
		},
	})
	want := []rbacv1.Subject{
		{Kind: rbacv1.UserKind, Name: "alice", APIGroup: rbacv1.GroupName},
		{Kind: rbacv1.GroupKind, Name: "devs", APIGroup: rbacv1.GroupName},
		{Kind: rbacv1.ServiceAccountKind, Name: "sa", Namespace: "ns"},
	}
	if diff := cmp.Diff(want, b.Subjects); diff != "" {
		t.Errorf("subjects (-want +got):\n%s", diff)
	}
	if b.RoleRef.APIGroup != rbacv1.GroupName {
		t.Errorf("roleRef apiGroup = %q, want %q", b.RoleRef.APIGroup, rbacv1.GroupName)
	}
	if got := defaulted(t, &rbacv1.ClusterRoleBinding{}).RoleRef.APIGroup; got != rbacv1.GroupName {
		t.Errorf("cluster role binding roleRef apiGroup = %q, want %q", got, rbacv1.GroupName)
	}
}
