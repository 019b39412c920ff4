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
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func addApps(s *runtime.Scheme) {
	add(s, deployment)
	add(s, eachItem(func(l *appsv1.DeploymentList) []appsv1.Deployment { return l.Items }, deployment))
	add(s, statefulSet)
	add(s, eachItem(func(l *appsv1.StatefulSetList) []appsv1.StatefulSet { return l.Items }, statefulSet))
	add(s, daemonSet)
	add(s, eachItem(func(l *appsv1.DaemonSetList) []appsv1.DaemonSet { return l.Items }, daemonSet))
	add(s, replicaSet)
	add(s, eachItem(func(l *appsv1.ReplicaSetList) []appsv1.ReplicaSet { return l.Items }, replicaSet))
}

// revisionHistoryLimit is how many old revisions a workload keeps for
// rollback unless told otherwise.
const revisionHistoryLimit = 10

func deployment(d *appsv1.Deployment) {
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptr.To[int32](1)
	}
	deploymentStrategy(&d.Spec.Strategy)
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = ptr.To[int32](revisionHistoryLimit)
	}
	// Ten minutes without progress marks a rollout as failed.
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	}
	podTemplateSpec(&d.Spec.Template.Spec)
}

// deploymentStrategy rolls updates by default, a quarter of the replicas
// at a time both ways.
func deploymentStrategy(st *appsv1.DeploymentStrategy) {
	if st.Type == "" {
		st.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if st.Type != appsv1.RollingUpdateDeploymentStrategyType {
		return
	}
	if st.RollingUpdate == nil {
		st.RollingUpdate = &appsv1.RollingUpdateDeployment{}
	}
	if st.RollingUpdate.MaxUnavailable == nil {
		st.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("25%"))
	}
	if st.RollingUpdate.MaxSurge == nil {
		st.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("25%"))
	}
}

func statefulSet(ss *appsv1.StatefulSet) {
	spec := &ss.Spec
	if spec.PodManagementPolicy == "" {
		spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	statefulSetStrategy(&spec.UpdateStrategy)
	// Claims outlive the pods that used them unless asked otherwise.
	if spec.PersistentVolumeClaimRetentionPolicy == nil {
		spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	retention := spec.PersistentVolumeClaimRetentionPolicy
	if retention.WhenDeleted == "" {
		retention.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if retention.WhenScaled == "" {
		retention.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if spec.Replicas == nil {
		spec.Replicas = ptr.To[int32](1)
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = ptr.To[int32](revisionHistoryLimit)
	}
	podTemplateSpec(&spec.Template.Spec)
	for i := range spec.VolumeClaimTemplates {
		persistentVolumeClaim(&spec.VolumeClaimTemplates[i])
	}
}

// statefulSetStrategy rolls updates one pod at a time from the highest
// ordinal. The rolling parameters are filled in only when the strategy was
// left out or its rolling part was given: an explicit RollingUpdate type
// with no parameters stays so.
func statefulSetStrategy(st *appsv1.StatefulSetUpdateStrategy) {
	if st.Type == "" {
		st.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if st.RollingUpdate == nil {
			st.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if st.Type != appsv1.RollingUpdateStatefulSetStrategyType || st.RollingUpdate == nil {
		return
	}
	if st.RollingUpdate.Partition == nil {
		st.RollingUpdate.Partition = ptr.To[int32](0)
	}
	// MaxUnavailableStatefulSet is beta and on in 1.37.
	if st.RollingUpdate.MaxUnavailable == nil {
		st.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	}
}

func daemonSet(ds *appsv1.DaemonSet) {
	daemonSetStrategy(&ds.Spec.UpdateStrategy)
	if ds.Spec.RevisionHistoryLimit == nil {
		ds.Spec.RevisionHistoryLimit = ptr.To[int32](revisionHistoryLimit)
	}
	podTemplateSpec(&ds.Spec.Template.Spec)
}

// daemonSetStrategy rolls updates one node at a time, without surge: a
// node runs at most one of the set's pods.
func daemonSetStrategy(st *appsv1.DaemonSetUpdateStrategy) {
	if st.Type == "" {
		st.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if st.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		return
	}
	if st.RollingUpdate == nil {
		st.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
	}
	if st.RollingUpdate.MaxUnavailable == nil {
		st.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	}
	if st.RollingUpdate.MaxSurge == nil {
		st.RollingUpdate.MaxSurge = ptr.To(intstr.FromInt32(0))
	}
}

func replicaSet(rs *appsv1.ReplicaSet) {
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = ptr.To[int32](1)
	}
	podTemplateSpec(&rs.Spec.Template.Spec)
}
