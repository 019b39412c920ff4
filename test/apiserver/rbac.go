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

package apiserver

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/klog/v2"

	"github.com/admitkit/admitkit/registry/settings/bootstrappolicy"
)

// PostStartHookBootstrapRoles creates or updates admitkit's ClusterRoles.
const PostStartHookBootstrapRoles = "admitkit-bootstrap-roles"

// addBootstrapRolesHook reconciles admitkit's ClusterRoles at every start,
// as kube-apiserver does its own bootstrap roles: the server is not ready
// until they are in place, and a role someone changed gets its rules back.
func addBootstrapRolesHook(server *genericapiserver.GenericAPIServer) error {
	return server.AddPostStartHook(PostStartHookBootstrapRoles, func(ctx genericapiserver.PostStartHookContext) error {
		client, err := rbacv1client.NewForConfig(ctx.LoopbackClientConfig)
		if err != nil {
			return fmt.Errorf("%s: %w", PostStartHookBootstrapRoles, err)
		}
		// RBAC storage may not answer yet, and another server sharing etcd
		// may write the same roles: retry until a pass succeeds.
		return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			if err := bootstrappolicy.Reconcile(ctx, client); err != nil {
				klog.V(2).InfoS("Retrying admitkit's bootstrap ClusterRoles", "err", err)
				return false, nil
			}
			return true, nil
		})
	})
}
