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
	// The digest algorithms an image reference may name must be linked in,
	// or a reference carrying such a digest fails to parse and the pull
	// policy comes out differently from kube-apiserver's.
	_ "crypto/sha256"
	_ "crypto/sha512"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// podTemplateSpec defaults a pod spec wherever one appears: in a Pod, a
// PodTemplate, and the template of every workload. Defaults that only a
// Pod gets are in defaultPod.
func podTemplateSpec(spec *corev1.PodSpec) {
	podSpecFields(spec)
	for i := range spec.Volumes {
		volume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		container(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		container(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		// An ephemeral container shares the container's fields, and
		// kube-apiserver defaults them the same way.
		container((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	roundUp(spec.Overhead)
	if spec.Resources != nil {
		resourceRequirements(spec.Resources)
	}
}

// podSpecFields sets the spec's own scalar defaults.
func podSpecFields(spec *corev1.PodSpec) {
	// serviceAccount is the deprecated spelling of serviceAccountName: the
	// newer field wins, and the old one always mirrors it.
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	// An empty security context is stored even when none was given.
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
}

// volume defaults one pod volume and its source.
func volume(v *corev1.Volume) {
	// A volume that names no source is an emptyDir.
	if ptr.AllPtrFieldsNil(&v.VolumeSource) {
		v.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	}
	src := &v.VolumeSource
	// ImageVolume is GA and locked on in 1.37: an image volume's pull
	// policy follows the same rule as a container's.
	if src.Image != nil && src.Image.PullPolicy == "" {
		src.Image.PullPolicy = pullPolicy(src.Image.Reference)
	}
	if src.HostPath != nil {
		hostPath(src.HostPath)
	}
	if src.Secret != nil && src.Secret.DefaultMode == nil {
		src.Secret.DefaultMode = ptr.To(corev1.SecretVolumeSourceDefaultMode)
	}
	if src.ISCSI != nil {
		iscsi(&src.ISCSI.ISCSIInterface)
	}
	if src.RBD != nil {
		rbd(&src.RBD.RBDPool, &src.RBD.RadosUser, &src.RBD.Keyring)
	}
	if src.DownwardAPI != nil {
		downwardAPIVolume(src.DownwardAPI)
	}
	if src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil {
		src.ConfigMap.DefaultMode = ptr.To(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if src.AzureDisk != nil {
		azureDisk(src.AzureDisk)
	}
	if src.Projected != nil {
		projected(src.Projected)
	}
	if src.ScaleIO != nil {
		scaleIO(&src.ScaleIO.StorageMode, &src.ScaleIO.FSType)
	}
	if src.Ephemeral != nil && src.Ephemeral.VolumeClaimTemplate != nil {
		claimSpec(&src.Ephemeral.VolumeClaimTemplate.Spec)
	}
}

// hostPath leaves the type unchecked ("") when none is given, which the
// API stores explicitly.
func hostPath(h *corev1.HostPathVolumeSource) {
	if h.Type == nil {
		h.Type = ptr.To(corev1.HostPathUnset)
	}
}

// iscsi names the default iSCSI transport; shared by pod volumes and
// persistent volumes.
func iscsi(iface *string) {
	if *iface == "" {
		*iface = "default"
	}
}

// rbd fills in Ceph's conventional pool, user and keyring; shared by pod
// volumes and persistent volumes, whose RBD sources are distinct types.
func rbd(pool, user, keyring *string) {
	if *pool == "" {
		*pool = "rbd"
	}
	if *user == "" {
		*user = "admin"
	}
	if *keyring == "" {
		*keyring = "/etc/ceph/keyring"
	}
}

// scaleIO fills in ScaleIO's thin provisioning and xfs; shared by pod
// volumes and persistent volumes.
func scaleIO(storageMode, fsType *string) {
	if *storageMode == "" {
		*storageMode = "ThinProvisioned"
	}
	if *fsType == "" {
		*fsType = "xfs"
	}
}

// azureDisk spells out the Azure disk defaults the API declares on the
// type: read-write caching, ext4, writable, a shared blob disk.
func azureDisk(d *corev1.AzureDiskVolumeSource) {
	if d.CachingMode == nil {
		d.CachingMode = ptr.To(corev1.AzureDataDiskCachingReadWrite)
	}
	if d.FSType == nil {
		d.FSType = ptr.To("ext4")
	}
	if d.ReadOnly == nil {
		d.ReadOnly = ptr.To(false)
	}
	if d.Kind == nil {
		d.Kind = ptr.To(corev1.AzureSharedBlobDisk)
	}
}

func downwardAPIVolume(d *corev1.DownwardAPIVolumeSource) {
	if d.DefaultMode == nil {
		d.DefaultMode = ptr.To(corev1.DownwardAPIVolumeSourceDefaultMode)
	}
	for i := range d.Items {
		fieldRef(d.Items[i].FieldRef)
	}
}

func projected(p *corev1.ProjectedVolumeSource) {
	if p.DefaultMode == nil {
		p.DefaultMode = ptr.To(corev1.ProjectedVolumeSourceDefaultMode)
	}
	for i := range p.Sources {
		s := &p.Sources[i]
		if s.DownwardAPI != nil {
			for j := range s.DownwardAPI.Items {
				fieldRef(s.DownwardAPI.Items[j].FieldRef)
			}
		}
		// A projected token lives an hour unless asked otherwise.
		if s.ServiceAccountToken != nil && s.ServiceAccountToken.ExpirationSeconds == nil {
			s.ServiceAccountToken.ExpirationSeconds = ptr.To[int64](3600)
		}
	}
}

// fieldRef makes a field selector's API version explicit: the fields it
// names are the core v1 pod's. It accepts nil.
func fieldRef(f *corev1.ObjectFieldSelector) {
	if f != nil && f.APIVersion == "" {
		f.APIVersion = "v1"
	}
}

// container defaults a regular, init or ephemeral container.
func container(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicy(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		envSource(c.Env[i].ValueFrom)
	}
	resourceRequirements(&c.Resources)
	probe(c.LivenessProbe)
	probe(c.ReadinessProbe)
	probe(c.StartupProbe)
	if c.Lifecycle != nil {
		lifecycleHandler(c.Lifecycle.PostStart)
		lifecycleHandler(c.Lifecycle.PreStop)
	}
}

// pullPolicy is the policy for an image given without one: a floating
// "latest" tag (named, or implied by naming neither tag nor digest) is
// pulled every time, anything else only when missing. A reference that
// does not parse counts as not "latest", as in kube-apiserver; validation
// refuses it later.
func pullPolicy(image string) corev1.PullPolicy {
	if imageTag(image) == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// imageTag is the tag an image reference resolves to: its own, "latest"
// when it names neither tag nor digest, "" when it has only a digest or
// does not parse.
func imageTag(image string) string {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return ""
	}
	if tagged, ok := named.(reference.Tagged); ok && tagged.Tag() != "" {
		return tagged.Tag()
	}
	if _, ok := named.(reference.Digested); ok {
		return ""
	}
	return "latest"
}

// envSource defaults where an environment variable's value comes from. It
// accepts nil.
func envSource(from *corev1.EnvVarSource) {
	if from == nil {
		return
	}
	fieldRef(from.FieldRef)
	// A file key is required unless it says otherwise.
	if from.FileKeyRef != nil && from.FileKeyRef.Optional == nil {
		from.FileKeyRef.Optional = ptr.To(false)
	}
}

// probe gives a probe kube's documented timings: 1 s timeout, every 10 s,
// one success to pass, three failures to fail. It accepts nil.
func probe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	httpGet(p.HTTPGet)
	// An empty gRPC service name asks for the server's overall health.
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptr.To("")
	}
}

// lifecycleHandler defaults a postStart or preStop hook. It accepts nil.
func lifecycleHandler(h *corev1.LifecycleHandler) {
	if h != nil {
		httpGet(h.HTTPGet)
	}
}

// httpGet asks for "/" over plain HTTP unless told otherwise. It accepts
// nil. (The HTTP protocol version is defaulted only with the alpha gate
// H2CContainerProbe, off in 1.37.)
func httpGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func resourceRequirements(r *corev1.ResourceRequirements) {
	roundUp(r.Limits)
	roundUp(r.Requests)
}

// roundUp rounds every quantity up to a whole milli-unit, the finest
// precision the API keeps: 0.0001 CPU is stored as 1m. It accepts nil.
func roundUp(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(-3)
		list[name] = q
	}
}
