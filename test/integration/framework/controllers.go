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

package framework

import (
	"context"
	"fmt"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/pkg/controller/clusterroleaggregation"
	"k8s.io/kubernetes/pkg/controller/deployment"
	"k8s.io/kubernetes/pkg/controller/replicaset"
)

// RunWorkloadControllers runs kube-controller-manager's Deployment and
// ReplicaSet controllers in-process against config until ctx ends, so that
// tests can create Deployments and get pods the way a cluster makes them.
// Nothing schedules or runs the pods. It also runs the ClusterRole
// aggregation controller, which fills the admin, edit and view roles from
// the ClusterRoles labelled to aggregate into them.
func RunWorkloadControllers(ctx context.Context, config *rest.Config) error {
	config = rest.CopyConfig(config)
	config.UserAgent = "admitkit-test-controllers"
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	apps := factory.Apps().V1()
	pods := factory.Core().V1().Pods()
	deployments, err := deployment.NewDeploymentController(ctx, apps.Deployments(), apps.ReplicaSets(), pods, client)
	if err != nil {
		return fmt.Errorf("deployment controller: %w", err)
	}
	// 500 is kube-controller-manager's default --concurrent-replicaset-syncs burst.
	replicaSets := replicaset.NewReplicaSetController(ctx, apps.ReplicaSets(), pods, client, 500)
	aggregation := clusterroleaggregation.NewClusterRoleAggregation(factory.Rbac().V1().ClusterRoles(), client.RbacV1())
	factory.Start(ctx.Done())
	go deployments.Run(ctx, 2)
	go replicaSets.Run(ctx, 2)
	go aggregation.Run(ctx, 1)
	return nil
}
