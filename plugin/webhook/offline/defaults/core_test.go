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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// defaulted defaults obj through NewScheme, as offline does.
func defaulted[T runtime.Object](t *testing.T, obj T) T {
	t.Helper()
	NewScheme().Default(obj)
	return obj
}

var quantityByString = cmp.Comparer(func(a, b resource.Quantity) bool { return a.String() == b.String() })

func TestPodDefaults(t *testing.T) {
	p := defaulted(t, &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:  "app",
			Image: "nginx",
			Ports: []corev1.ContainerPort{{ContainerPort: 80}},
			Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.0001")},
			},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
		}},
	}})
	want := corev1.PodSpec{
		Containers: []corev1.Container{{
			Name:                     "app",
			Image:                    "nginx",
			ImagePullPolicy:          corev1.PullAlways,
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			Ports:                    []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
			Resources: corev1.ResourceRequirements{
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")},
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")},
			},
			LivenessProbe: &corev1.Probe{
				ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80), Path: "/", Scheme: corev1.URISchemeHTTP}},
				TimeoutSeconds:   1,
				PeriodSeconds:    10,
				SuccessThreshold: 1,
				FailureThreshold: 3,
			},
		}},
		RestartPolicy:                 corev1.RestartPolicyAlways,
		TerminationGracePeriodSeconds: ptr.To[int64](30),
		DNSPolicy:                     corev1.DNSClusterFirst,
		SecurityContext:               &corev1.PodSecurityContext{},
		SchedulerName:                 "default-scheduler",
		EnableServiceLinks:            ptr.To(true),
	}
	if diff := cmp.Diff(want, p.Spec, quantityByString); diff != "" {
		t.Errorf("defaulted pod spec (-want +got):\n%s", diff)
	}
}

func TestPodKeepsWhatIsGiven(t *testing.T) {
	p := defaulted(t, &corev1.Pod{Spec: corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: ptr.To[int64](-5),
		Containers:                    []corev1.Container{{Name: "a", Image: "nginx:1.27", ImagePullPolicy: corev1.PullNever}},
	}})
	if p.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy = %q, want Never kept", p.Spec.RestartPolicy)
	}
	if got := *p.Spec.TerminationGracePeriodSeconds; got != 1 {
		t.Errorf("a pod's negative terminationGracePeriodSeconds became %d, want 1", got)
	}
	if got := p.Spec.Containers[0].ImagePullPolicy; got != corev1.PullNever {
		t.Errorf("imagePullPolicy = %q, want Never kept", got)
	}
}

func TestImagePullPolicy(t *testing.T) {
	for image, want := range map[string]corev1.PullPolicy{
		"nginx":                            corev1.PullAlways,
		"nginx:latest":                     corev1.PullAlways,
		"registry.example:5000/app:latest": corev1.PullAlways,
		"nginx:1.27":                       corev1.PullIfNotPresent,
		"nginx@sha256:" + digest:           corev1.PullIfNotPresent,
		"nginx:latest@sha256:" + digest:    corev1.PullAlways,
		"Nginx":                            corev1.PullIfNotPresent, // does not parse
		"":                                 corev1.PullIfNotPresent, // does not parse
	} {
		if got := pullPolicy(image); got != want {
			t.Errorf("pullPolicy(%q) = %q, want %q", image, got, want)
		}
	}
}

const digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestPodTemplateGetsNoPodOnlyDefaults(t *testing.T) {
	pt := defaulted(t, &corev1.PodTemplate{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		HostNetwork: true,
		Containers: []corev1.Container{{
			Name: "a", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 80}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
		}},
	}}})
	spec := pt.Template.Spec
	if spec.EnableServiceLinks != nil {
		t.Errorf("a template got enableServiceLinks %v; only a Pod does", *spec.EnableServiceLinks)
	}
	if spec.Containers[0].Resources.Requests != nil {
		t.Errorf("a template got requests %v from its limits; only a Pod does", spec.Containers[0].Resources.Requests)
	}
	if spec.Containers[0].Ports[0].HostPort != 0 {
		t.Errorf("a template's port got hostPort %d; only a Pod's does", spec.Containers[0].Ports[0].HostPort)
	}
	if spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("restartPolicy = %q, want Always", spec.RestartPolicy)
	}
}

func TestPodHostNetworkPorts(t *testing.T) {
	p := defaulted(t, &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{
		Name: "a", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
	}}}})
	if got := p.Spec.Containers[0].Ports[0].HostPort; got != 8080 {
		t.Errorf("hostPort = %d, want the container port 8080", got)
	}
}

func TestVolumeDefaults(t *testing.T) {
	p := defaulted(t, &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "none"},
		{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
		{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
		}}}},
		{Name: "image", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "tools:1"}}},
	}}})
	v := p.Spec.Volumes
	if v[0].EmptyDir == nil {
		t.Errorf("a volume with no source got %+v, want an emptyDir", v[0].VolumeSource)
	}
	if got := *v[1].Secret.DefaultMode; got != 0o644 {
		t.Errorf("secret defaultMode = %o, want 644", got)
	}
	if got := *v[2].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds; got != 3600 {
		t.Errorf("token expirationSeconds = %d, want 3600", got)
	}
	if got := v[3].Image.PullPolicy; got != corev1.PullIfNotPresent {
		t.Errorf("image volume pullPolicy = %q, want IfNotPresent", got)
	}
}

func TestPodStatusIPs(t *testing.T) {
	p := defaulted(t, &corev1.Pod{Status: corev1.PodStatus{PodIP: "10.0.0.1", PodIPs: []corev1.PodIP{{IP: "10.0.0.2"}}}})
	if diff := cmp.Diff([]corev1.PodIP{{IP: "10.0.0.1"}}, p.Status.PodIPs); diff != "" {
		t.Errorf("podIPs (-want +got), podIP must win:\n%s", diff)
	}
	p = defaulted(t, &corev1.Pod{Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "fd00::1"}}}})
	if p.Status.PodIP != "fd00::1" {
		t.Errorf("podIP = %q, want the first of podIPs", p.Status.PodIP)
	}
}

func TestReplicationControllerDefaults(t *testing.T) {
	labels := map[string]string{"app": "web"}
	rc := defaulted(t, &corev1.ReplicationController{Spec: corev1.ReplicationControllerSpec{
		Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}},
	}})
	if diff := cmp.Diff(labels, rc.Spec.Selector); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(labels, rc.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if *rc.Spec.Replicas != 1 || rc.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("replicas %d, template restartPolicy %q; want 1 and Always", *rc.Spec.Replicas, rc.Spec.Template.Spec.RestartPolicy)
	}
}

func TestServiceDefaults(t *testing.T) {
	svc := defaulted(t, &corev1.Service{Spec: corev1.ServiceSpec{
		Type:            corev1.ServiceTypeLoadBalancer,
		SessionAffinity: corev1.ServiceAffinityClientIP,
		Ports:           []corev1.ServicePort{{Port: 443}, {Port: 80, TargetPort: intstr.FromString("http")}},
	}})
	want := corev1.ServiceSpec{
		Type:            corev1.ServiceTypeLoadBalancer,
		SessionAffinity: corev1.ServiceAffinityClientIP,
		SessionAffinityConfig: &corev1.SessionAffinityConfig{
			ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](10800)},
		},
		Ports: []corev1.ServicePort{
			{Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(443)},
			{Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")},
		},
		ExternalTrafficPolicy:         corev1.ServiceExternalTrafficPolicyCluster,
		InternalTrafficPolicy:         ptr.To(corev1.ServiceInternalTrafficPolicyCluster),
		AllocateLoadBalancerNodePorts: ptr.To(true),
	}
	if diff := cmp.Diff(want, svc.Spec); diff != "" {
		t.Errorf("service spec (-want +got):\n%s", diff)
	}
	external := defaulted(t, &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName}})
	if external.Spec.InternalTrafficPolicy != nil || external.Spec.ExternalTrafficPolicy != "" {
		t.Errorf("an ExternalName service got traffic policies %v, %q", external.Spec.InternalTrafficPolicy, external.Spec.ExternalTrafficPolicy)
	}
}

func TestSimpleCoreDefaults(t *testing.T) {
	if got := defaulted(t, &corev1.Secret{}).Type; got != corev1.SecretTypeOpaque {
		t.Errorf("secret type = %q, want Opaque", got)
	}
	if got := defaulted(t, &corev1.ConfigMap{}).Data; got == nil {
		t.Error("a config map's absent data stayed nil, want an empty map")
	}
	ns := defaulted(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
	if ns.Labels[corev1.LabelMetadataName] != "shop" || ns.Status.Phase != corev1.NamespaceActive {
		t.Errorf("namespace labels %v, phase %q; want %s=shop and Active", ns.Labels, ns.Status.Phase, corev1.LabelMetadataName)
	}
	if got := defaulted(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "shop-"}}).Labels; got != nil {
		t.Errorf("a namespace without a name yet got labels %v", got)
	}
	pvc := defaulted(t, &corev1.PersistentVolumeClaim{})
	if pvc.Status.Phase != corev1.ClaimPending || *pvc.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("claim phase %q, volumeMode %q; want Pending and Filesystem", pvc.Status.Phase, *pvc.Spec.VolumeMode)
	}
	pv := defaulted(t, &corev1.PersistentVolume{})
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || pv.Status.Phase != corev1.VolumePending {
		t.Errorf("volume reclaim policy %q, phase %q; want Retain and Pending", pv.Spec.PersistentVolumeReclaimPolicy, pv.Status.Phase)
	}
	//lint:ignore SA1019 kube-apiserver still serves and defaults the deprecated Endpoints
	ep := defaulted(t, &corev1.Endpoints{Subsets: []corev1.EndpointSubset{{Ports: []corev1.EndpointPort{{Port: 80}}}}})
	if got := ep.Subsets[0].Ports[0].Protocol; got != corev1.ProtocolTCP {
		t.Errorf("endpoints port protocol = %q, want TCP", got)
	}
}

func TestLimitRangeDefaults(t *testing.T) {
	lr := defaulted(t, &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer,
		Max:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Min:  corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}}}})
	item := lr.Spec.Limits[0]
	wantDefault := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	wantRequest := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	if diff := cmp.Diff(wantDefault, item.Default, quantityByString); diff != "" {
		t.Errorf("default (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantRequest, item.DefaultRequest, quantityByString); diff != "" {
		t.Errorf("defaultRequest (-want +got):\n%s", diff)
	}
}

func TestListsDefaultTheirItems(t *testing.T) {
	l := defaulted(t, &corev1.PodList{Items: []corev1.Pod{{}, {}}})
	for i, p := range l.Items {
		if p.Spec.RestartPolicy != corev1.RestartPolicyAlways {
			t.Errorf("item %d restartPolicy = %q, want Always", i, p.Spec.RestartPolicy)
		}
	}
}
