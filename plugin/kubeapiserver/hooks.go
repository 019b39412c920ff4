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

package kubeapiserver

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/dynamic"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/klog/v2"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/crds"
	"github.com/admitkit/admitkit/registry/settings/bootstrappolicy"
)

// Post-start hooks Install adds; each appears in /readyz as
// poststarthook/<name>, and a server is not ready until each has run.
const (
	// PostStartHookMutatorCRDs installs the CRDs of the LocationMutator's
	// mutator kinds.
	PostStartHookMutatorCRDs = "admitkit-mutator-crds"
	// PostStartHookBootstrapRoles creates or updates the PodPreset
	// ClusterRoles.
	PostStartHookBootstrapRoles = "admitkit-bootstrap-roles"
)

// hookRetryInterval paces the hooks' retries while the storage they write
// to is still starting.
const hookRetryInterval = 100 * time.Millisecond

// addMutatorCRDsHook adds a post-start hook to server that creates the
// mutator kinds' CRDs that are missing (a cluster with Gatekeeper's keeps
// them), and the external data Provider's, and holds readiness until all
// are served, so that a ready server takes `kubectl apply` of a mutator. Add it only when the server
// chain serves customresourcedefinitions.
func addMutatorCRDsHook(server *genericapiserver.GenericAPIServer) error {
	return server.AddPostStartHook(PostStartHookMutatorCRDs, func(ctx genericapiserver.PostStartHookContext) error {
		client, err := dynamic.NewForConfig(ctx.LoopbackClientConfig)
		if err != nil {
			return fmt.Errorf("%s: %w", PostStartHookMutatorCRDs, err)
		}
		// The CRD storage may not answer yet, and another server sharing
		// etcd may create the same CRDs: retry until a pass succeeds.
		if err := wait.PollUntilContextCancel(ctx, hookRetryInterval, true, func(ctx context.Context) (bool, error) {
			if err := crds.Install(ctx, client); err != nil {
				klog.V(2).InfoS("Retrying the mutator CRDs", "err", err)
				return false, nil
			}
			return true, nil
		}); err != nil {
			return fmt.Errorf("%s: %w", PostStartHookMutatorCRDs, err)
		}
		if err := crds.WaitEstablished(ctx, client, hookRetryInterval); err != nil {
			return fmt.Errorf("%s: %w", PostStartHookMutatorCRDs, err)
		}
		return nil
	})
}

// addBootstrapRolesHook adds a post-start hook to server that reconciles
// the PodPreset ClusterRoles (bootstrappolicy.ClusterRoles) at every start,
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
		return wait.PollUntilContextCancel(ctx, hookRetryInterval, true, func(ctx context.Context) (bool, error) {
			if err := bootstrappolicy.Reconcile(ctx, client); err != nil {
				klog.V(2).InfoS("Retrying admitkit's bootstrap ClusterRoles", "err", err)
				return false, nil
			}
			return true, nil
		})
	})
}
