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
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestDeploymentDefaults(t *testing.T) {
	d := defaulted(t, &appsv1.Deployment{})
	want := appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1),
		Strategy: appsv1.DeploymentStrategy{
			Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromString("25%")),
				MaxSurge:       ptr.To(intstr.FromString("25%")),
			},
		},
		RevisionHistoryLimit:    ptr.To[int32](10),
		ProgressDeadlineSeconds: ptr.To[int32](600),
		Template:                corev1.PodTemplateSpec{Spec: defaultedTemplateSpec()},
	}
	if diff := cmp.Diff(want, d.Spec); diff != "" {
		t.Errorf("deployment spec (-want +got):\n%s", diff)
	}
	recreate := defaulted(t, &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}}})
	if recreate.Spec.Strategy.RollingUpdate != nil {
		t.Errorf("a Recreate deployment got rolling parameters %+v", recreate.Spec.Strategy.RollingUpdate)
	}
}

// defaultedTemplateSpec is what an empty pod template's spec becomes.
func defaultedTemplateSpec() corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyAlways,
		TerminationGracePeriodSeconds: ptr.To[int64](30),
		DNSPolicy:                     corev1.DNSClusterFirst,
		SecurityContext:               &corev1.PodSecurityContext{},
		SchedulerName:                 "default-scheduler",
	}
}

func TestStatefulSetDefaults(t *testing.T) {
	ss := defaulted(t, &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{
		VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{}},
	}})
	spec := ss.Spec
	if spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement || *spec.Replicas != 1 || *spec.RevisionHistoryLimit != 10 {
		t.Errorf("policy %q, replicas %d, history %d; want OrderedReady, 1, 10", spec.PodManagementPolicy, *spec.Replicas, *spec.RevisionHistoryLimit)
	}
	wantStrategy := appsv1.StatefulSetUpdateStrategy{
		Type: appsv1.RollingUpdateStatefulSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{
			Partition:      ptr.To[int32](0),
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		},
	}
	if diff := cmp.Diff(wantStrategy, spec.UpdateStrategy); diff != "" {
		t.Errorf("update strategy (-want +got):\n%s", diff)
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType || p.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("claim retention %+v, want Retain both", p)
	}
	if claim := spec.VolumeClaimTemplates[0]; claim.Status.Phase != corev1.ClaimPending || *claim.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("claim template phase %q, volumeMode %q; want Pending and Filesystem", claim.Status.Phase, *claim.Spec.VolumeMode)
	}
	// An explicit rolling update without parameters is kept as given.
	bare := defaulted(t, &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}}})
	if bare.Spec.UpdateStrategy.RollingUpdate != nil {
		t.Errorf("an explicit RollingUpdate got parameters %+v", bare.Spec.UpdateStrategy.RollingUpdate)
	}
}

func TestDaemonSetDefaults(t *testing.T) {
	ds := defaulted(t, &appsv1.DaemonSet{})
	want := appsv1.DaemonSetUpdateStrategy{
		Type: appsv1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDaemonSet{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			MaxSurge:       ptr.To(intstr.FromInt32(0)),
		},
	}
	if diff := cmp.Diff(want, ds.Spec.UpdateStrategy); diff != "" {
		t.Errorf("update strategy (-want +got):\n%s", diff)
	}
	if *ds.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("revisionHistoryLimit = %d, want 10", *ds.Spec.RevisionHistoryLimit)
	}
}

func TestReplicaSetDefaults(t *testing.T) {
	rs := defaulted(t, &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "a", Image: "nginx:1.27"}},
	}}}})
	if *rs.Spec.Replicas != 1 {
		t.Errorf("replicas = %d, want 1", *rs.Spec.Replicas)
	}
	if got := rs.Spec.Template.Spec.Containers[0].ImagePullPolicy; got != corev1.PullIfNotPresent {
		t.Errorf("template container imagePullPolicy = %q, want IfNotPresent", got)
	}
}
