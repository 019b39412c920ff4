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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func addCore(s *runtime.Scheme) {
	add(s, pod)
	add(s, eachItem(func(l *corev1.PodList) []corev1.Pod { return l.Items }, pod))
	add(s, podTemplate)
	add(s, eachItem(func(l *corev1.PodTemplateList) []corev1.PodTemplate { return l.Items }, podTemplate))
	add(s, replicationController)
	add(s, eachItem(func(l *corev1.ReplicationControllerList) []corev1.ReplicationController { return l.Items }, replicationController))
	add(s, service)
	add(s, eachItem(func(l *corev1.ServiceList) []corev1.Service { return l.Items }, service))
	add(s, secret)
	add(s, eachItem(func(l *corev1.SecretList) []corev1.Secret { return l.Items }, secret))
	add(s, configMap)
	add(s, eachItem(func(l *corev1.ConfigMapList) []corev1.ConfigMap { return l.Items }, configMap))
	add(s, persistentVolume)
	add(s, eachItem(func(l *corev1.PersistentVolumeList) []corev1.PersistentVolume { return l.Items }, persistentVolume))
	add(s, persistentVolumeClaim)
	add(s, eachItem(func(l *corev1.PersistentVolumeClaimList) []corev1.PersistentVolumeClaim { return l.Items }, persistentVolumeClaim))
	add(s, endpoints)
	//lint:ignore SA1019 kube-apiserver still serves and defaults the deprecated Endpoints
	add(s, eachItem(func(l *corev1.EndpointsList) []corev1.Endpoints { return l.Items }, endpoints))
	add(s, namespace)
	add(s, eachItem(func(l *corev1.NamespaceList) []corev1.Namespace { return l.Items }, namespace))
	add(s, node)
	add(s, eachItem(func(l *corev1.NodeList) []corev1.Node { return l.Items }, node))
	add(s, limitRange)
	add(s, eachItem(func(l *corev1.LimitRangeList) []corev1.LimitRange { return l.Items }, limitRange))
	add(s, resourceQuota)
	add(s, eachItem(func(l *corev1.ResourceQuotaList) []corev1.ResourceQuota { return l.Items }, resourceQuota))
}

// pod defaults a Pod: its spec as in any template, plus what only a Pod
// gets, plus its status.
func pod(p *corev1.Pod) {
	podOnly(&p.Spec)
	podTemplateSpec(&p.Spec)
	podStatus(&p.Status)
}

// podOnly holds the defaults kube-apiserver applies to a Pod but not to a
// pod template, so that a workload's stored template keeps its shape.
// (Pod-level requests are not among them: with PodLevelResourcesFixDefaulting,
// beta and on in 1.37, kube-apiserver sets them when it prepares the create,
// after admission, not when it defaults.)
func podOnly(spec *corev1.PodSpec) {
	// A negative grace period would mean "kill immediately"; a Pod gets
	// the shortest real one instead.
	if spec.TerminationGracePeriodSeconds != nil && *spec.TerminationGracePeriodSeconds < 0 {
		spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
	}
	// A container that caps a resource without requesting it requests its
	// cap. Ephemeral containers have no resources to schedule by.
	for i := range spec.Containers {
		requestLimits(&spec.Containers[i].Resources)
	}
	for i := range spec.InitContainers {
		requestLimits(&spec.InitContainers[i].Resources)
	}
	if spec.EnableServiceLinks == nil {
		spec.EnableServiceLinks = ptr.To(corev1.DefaultEnableServiceLinks)
	}
	// On the host's network a container port is a host port.
	if spec.HostNetwork {
		hostPorts(spec.Containers)
		hostPorts(spec.InitContainers)
	}
}

func requestLimits(r *corev1.ResourceRequirements) {
	if r.Limits == nil {
		return
	}
	if r.Requests == nil {
		r.Requests = corev1.ResourceList{}
	}
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = limit.DeepCopy()
		}
	}
}

func hostPorts(containers []corev1.Container) {
	for i := range containers {
		for j := range containers[i].Ports {
			port := &containers[i].Ports[j]
			if port.HostPort == 0 {
				port.HostPort = port.ContainerPort
			}
		}
	}
}

func podStatus(st *corev1.PodStatus) {
	podIPs(st)
	for _, list := range [][]corev1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses, st.EphemeralContainerStatuses} {
		for i := range list {
			roundUp(list[i].AllocatedResources)
			if list[i].Resources != nil {
				resourceRequirements(list[i].Resources)
			}
		}
	}
	roundUp(st.AllocatedResources)
	if st.Resources != nil {
		resourceRequirements(st.Resources)
	}
}

// podIPs keeps the singular podIP and the podIPs list agreeing. When they
// disagree podIP wins, since older kubelets write only that one.
func podIPs(st *corev1.PodStatus) {
	switch {
	case st.PodIP != "" && (len(st.PodIPs) == 0 || st.PodIPs[0].IP != st.PodIP):
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	case st.PodIP == "" && len(st.PodIPs) > 0:
		st.PodIP = st.PodIPs[0].IP
	}
}

// podTemplate defaults a PodTemplate's spec as in any template; the
// Pod-only defaults do not apply.
func podTemplate(t *corev1.PodTemplate) {
	podTemplateSpec(&t.Template.Spec)
}

func replicationController(rc *corev1.ReplicationController) {
	// Without a selector the controller selects its template's labels, and
	// without labels of its own it wears them too.
	if rc.Spec.Template != nil && rc.Spec.Template.Labels != nil {
		if len(rc.Spec.Selector) == 0 {
			rc.Spec.Selector = rc.Spec.Template.Labels
		}
		if len(rc.Labels) == 0 {
			rc.Labels = rc.Spec.Template.Labels
		}
	}
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = ptr.To[int32](1)
	}
	if rc.Spec.Template != nil {
		podTemplateSpec(&rc.Spec.Template.Spec)
	}
}

func service(svc *corev1.Service) {
	spec := &svc.Spec
	sessionAffinity(spec)
	if spec.Type == "" {
		spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range spec.Ports {
		servicePort(&spec.Ports[i])
	}
	// Only traffic from outside the cluster has an external policy to
	// default: a node port, a load balancer, or a cluster IP with external
	// IPs.
	externallyAccessible := spec.Type == corev1.ServiceTypeLoadBalancer || spec.Type == corev1.ServiceTypeNodePort ||
		(spec.Type == corev1.ServiceTypeClusterIP && len(spec.ExternalIPs) > 0)
	if externallyAccessible && spec.ExternalTrafficPolicy == "" {
		spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	// An ExternalName service has no cluster traffic to route.
	if spec.InternalTrafficPolicy == nil && (spec.Type == corev1.ServiceTypeNodePort ||
		spec.Type == corev1.ServiceTypeLoadBalancer || spec.Type == corev1.ServiceTypeClusterIP) {
		spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	}
	if spec.Type == corev1.ServiceTypeLoadBalancer {
		if spec.AllocateLoadBalancerNodePorts == nil {
			spec.AllocateLoadBalancerNodePorts = ptr.To(true)
		}
		// A load balancer that reports an IP without saying how it routes
		// it is taken to be a virtual IP.
		for i := range svc.Status.LoadBalancer.Ingress {
			ing := &svc.Status.LoadBalancer.Ingress[i]
			if ing.IP != "" && ing.IPMode == nil {
				ing.IPMode = ptr.To(corev1.LoadBalancerIPModeVIP)
			}
		}
	}
}

// sessionAffinity defaults to none, which carries no configuration; client
// IP affinity without a timeout gets the three-hour default, replacing the
// whole configuration.
func sessionAffinity(spec *corev1.ServiceSpec) {
	if spec.SessionAffinity == "" {
		spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	switch spec.SessionAffinity {
	case corev1.ServiceAffinityNone:
		spec.SessionAffinityConfig = nil
	case corev1.ServiceAffinityClientIP:
		cfg := spec.SessionAffinityConfig
		if cfg == nil || cfg.ClientIP == nil || cfg.ClientIP.TimeoutSeconds == nil {
			spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{
				ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To(corev1.DefaultClientIPServiceAffinitySeconds)},
			}
		}
	}
}

// servicePort defaults the protocol to TCP and an unset target port (the
// integer 0 or the empty name, exactly) to the service port itself.
func servicePort(p *corev1.ServicePort) {
	if p.Protocol == "" {
		p.Protocol = corev1.ProtocolTCP
	}
	if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
		p.TargetPort = intstr.FromInt32(p.Port)
	}
}

func secret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
}

// configMap stores an absent data map as an empty one.
func configMap(c *corev1.ConfigMap) {
	if c.Data == nil {
		c.Data = map[string]string{}
	}
}

func persistentVolume(pv *corev1.PersistentVolume) {
	if pv.Status.Phase == "" {
		pv.Status.Phase = corev1.VolumePending
	}
	// A volume created by hand is kept when its claim goes away.
	if pv.Spec.PersistentVolumeReclaimPolicy == "" {
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	}
	if pv.Spec.VolumeMode == nil {
		pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	persistentVolumeSpec(&pv.Spec)
}

// persistentVolumeSpec defaults what a persistent volume's spec shares
// with a VolumeAttachment's inline volume.
func persistentVolumeSpec(spec *corev1.PersistentVolumeSpec) {
	roundUp(spec.Capacity)
	src := &spec.PersistentVolumeSource
	if src.HostPath != nil {
		hostPath(src.HostPath)
	}
	if src.RBD != nil {
		rbd(&src.RBD.RBDPool, &src.RBD.RadosUser, &src.RBD.Keyring)
	}
	if src.ISCSI != nil {
		iscsi(&src.ISCSI.ISCSIInterface)
	}
	if src.AzureDisk != nil {
		azureDisk(src.AzureDisk)
	}
	if src.ScaleIO != nil {
		scaleIO(&src.ScaleIO.StorageMode, &src.ScaleIO.FSType)
	}
}

func persistentVolumeClaim(pvc *corev1.PersistentVolumeClaim) {
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = corev1.ClaimPending
	}
	claimSpec(&pvc.Spec)
	roundUp(pvc.Status.Capacity)
	roundUp(pvc.Status.AllocatedResources)
}

// claimSpec defaults a claim's spec wherever one appears: a claim, an
// ephemeral volume's template, a StatefulSet's claim templates.
func claimSpec(spec *corev1.PersistentVolumeClaimSpec) {
	if spec.VolumeMode == nil {
		spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	}
	roundUp(spec.Resources.Limits)
	roundUp(spec.Resources.Requests)
}

//lint:ignore SA1019 kube-apiserver still serves and defaults the deprecated Endpoints
func endpoints(e *corev1.Endpoints) {
	for i := range e.Subsets {
		for j := range e.Subsets[i].Ports {
			if e.Subsets[i].Ports[j].Protocol == "" {
				e.Subsets[i].Ports[j].Protocol = corev1.ProtocolTCP
			}
		}
	}
}

// namespace labels a namespace with its own name, so that selectors can
// pick namespaces by name; a namespace still to be named (generateName)
// gets the label when kube-apiserver names it, not here.
func namespace(ns *corev1.Namespace) {
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
}

// node takes a node that reports no allocatable resources to have all its
// capacity allocatable.
func node(n *corev1.Node) {
	if n.Status.Allocatable == nil && n.Status.Capacity != nil {
		n.Status.Allocatable = make(corev1.ResourceList, len(n.Status.Capacity))
		for name, q := range n.Status.Capacity {
			n.Status.Allocatable[name] = q.DeepCopy()
		}
	}
	roundUp(n.Status.Capacity)
	roundUp(n.Status.Allocatable)
}

func limitRange(lr *corev1.LimitRange) {
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		if item.Type == corev1.LimitTypeContainer {
			containerLimits(item)
		}
		roundUp(item.Max)
		roundUp(item.Min)
		roundUp(item.Default)
		roundUp(item.DefaultRequest)
		roundUp(item.MaxLimitRequestRatio)
	}
}

// containerLimits completes a container limit range so that it always has
// both defaults: the default limit falls back to the maximum, and the
// default request to the default limit, then to the minimum.
func containerLimits(item *corev1.LimitRangeItem) {
	if item.Default == nil {
		item.Default = corev1.ResourceList{}
	}
	if item.DefaultRequest == nil {
		item.DefaultRequest = corev1.ResourceList{}
	}
	fillMissing(item.Default, item.Max)
	fillMissing(item.DefaultRequest, item.Default)
	fillMissing(item.DefaultRequest, item.Min)
}

// fillMissing copies into dst each of src's quantities that dst lacks.
func fillMissing(dst, src corev1.ResourceList) {
	for name, q := range src {
		if _, ok := dst[name]; !ok {
			dst[name] = q.DeepCopy()
		}
	}
}

func resourceQuota(q *corev1.ResourceQuota) {
	roundUp(q.Spec.Hard)
	roundUp(q.Status.Hard)
	roundUp(q.Status.Used)
}
