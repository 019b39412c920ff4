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
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func addRBAC(s *runtime.Scheme) {
	add(s, roleBinding)
	add(s, eachItem(func(l *rbacv1.RoleBindingList) []rbacv1.RoleBinding { return l.Items }, roleBinding))
	add(s, clusterRoleBinding)
	add(s, eachItem(func(l *rbacv1.ClusterRoleBindingList) []rbacv1.ClusterRoleBinding { return l.Items }, clusterRoleBinding))
}

func roleBinding(b *rbacv1.RoleBinding) {
	roleRef(&b.RoleRef)
	subjects(b.Subjects)
}

func clusterRoleBinding(b *rbacv1.ClusterRoleBinding) {
	roleRef(&b.RoleRef)
	subjects(b.Subjects)
}

// roleRef: a binding refers to an RBAC role unless it names another group.
func roleRef(r *rbacv1.RoleRef) {
	if r.APIGroup == "" {
		r.APIGroup = rbacv1.GroupName
	}
}

// subjects gives users and groups the RBAC API group; a service account
// is a core object, whose group is "".
func subjects(list []rbacv1.Subject) {
	for i := range list {
		s := &list[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}
