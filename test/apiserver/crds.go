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
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/crds"
)

// PostStartHookMutatorCRDs installs the CRDs of the LocationMutator's
// mutator kinds.
const PostStartHookMutatorCRDs = "admitkit-mutator-crds"

// addMutatorCRDsHook creates the mutator kinds' CRDs that are missing (a
// cluster with Gatekeeper's keeps them) and holds readiness until all four
// are served, so that a ready server takes `kubectl apply` of a mutator.
// Without the CRD API there is nothing to install: the LocationMutator then
// runs no mutators from the API.
func addMutatorCRDsHook(server *genericapiserver.GenericAPIServer, crdAPIEnabled bool) error {
	if !crdAPIEnabled {
		return nil
	}
	return server.AddPostStartHook(PostStartHookMutatorCRDs, func(ctx genericapiserver.PostStartHookContext) error {
		client, err := dynamic.NewForConfig(ctx.LoopbackClientConfig)
		if err != nil {
			return fmt.Errorf("%s: %w", PostStartHookMutatorCRDs, err)
		}
		// The CRD storage may not answer yet, and another server sharing
		// etcd may create the same CRDs: retry until a pass succeeds.
		if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			if err := crds.Install(ctx, client); err != nil {
				klog.V(2).InfoS("Retrying the mutator CRDs", "err", err)
				return false, nil
			}
			return true, nil
		}); err != nil {
			return fmt.Errorf("%s: %w", PostStartHookMutatorCRDs, err)
		}
		if err := crds.WaitEstablished(ctx, client, 100*time.Millisecond); err != nil {
			return fmt.Errorf("%s: %w", PostStartHookMutatorCRDs, err)
		}
		return nil
	})
}
