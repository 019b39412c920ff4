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

package noderestriction

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// mirrorPodShape is what a mirror-pod create reads of an internal pod:
// podReferencesAPIObjects (apireferences.go) walked through the layout
// reader, in the same order and with the same answers. A whole-pod
// conversion here would cost more than ten times upstream's check.
type mirrorPodShape struct {
	meta                                  path // ObjectMeta
	nodeName, serviceAccountName          path
	imagePullSecrets, pullSecretName      path
	initContainers, containers, ephemeral path
	container, ephemeralContainer         containerShape
	resourceClaims                        path
	volumes                               path
	volume                                volumeShape
}

// containerShape serves both container types, whose environments share
// field names; a name read through a nil reference is "".
type containerShape struct {
	env, envFrom                    path
	valueFrom                       path // in an env var
	keySecretName, keyConfigMapName path // in its EnvVarSource
	fromSecretName, fromConfigMap   path // in an envFrom source
}

// Volume sources, by the role they play in the API-reference check.
const (
	srcAWSElasticBlockStore = iota
	srcAzureDisk
	srcCephFS
	srcCinder
	srcDownwardAPI
	srcEmptyDir
	srcFC
	srcFlexVolume
	srcFlocker
	srcGCEPersistentDisk
	srcGitRepo
	srcHostPath
	srcImage
	srcISCSI
	srcNFS
	srcPhotonPersistentDisk
	srcPortworxVolume
	srcQuobyte
	srcRBD
	srcScaleIO
	srcStorageOS
	srcVsphereVolume
	// Sources above reference no API object beyond the secrets caught by
	// name; those below do.
	srcConfigMap
	srcSecret
	srcCSI
	srcGlusterfs
	srcPersistentVolumeClaim
	srcEphemeral
	srcAzureFile
	srcProjected
	numSources
)

var sourceNames = [numSources]string{
	"AWSElasticBlockStore", "AzureDisk", "CephFS", "Cinder", "DownwardAPI", "EmptyDir", "FC", "FlexVolume",
	"Flocker", "GCEPersistentDisk", "GitRepo", "HostPath", "Image", "ISCSI", "NFS", "PhotonPersistentDisk",
	"PortworxVolume", "Quobyte", "RBD", "ScaleIO", "StorageOS", "VsphereVolume",
	"ConfigMap", "Secret", "CSI", "Glusterfs", "PersistentVolumeClaim", "Ephemeral", "AzureFile", "Projected",
}

const refFreeSources = 1<<(srcVsphereVolume+1) - 1

// secretSources are the sources that may name a secret, in the order
// podNamesSecret tries them, with the path to the name inside the source.
var secretSources = []struct {
	src  int
	name []string
}{
	{srcAzureFile, []string{"SecretName"}},
	{srcCephFS, []string{"SecretRef", "Name"}},
	{srcCinder, []string{"SecretRef", "Name"}},
	{srcFlexVolume, []string{"SecretRef", "Name"}},
	{srcProjected, nil}, // through its sources
	{srcRBD, []string{"SecretRef", "Name"}},
	{srcSecret, []string{"SecretName"}},
	{srcScaleIO, []string{"SecretRef", "Name"}},
	{srcISCSI, []string{"SecretRef", "Name"}},
	{srcStorageOS, []string{"SecretRef", "Name"}},
	{srcCSI, []string{"NodePublishSecretRef", "Name"}},
}

// sourceOffset is where a volume holds one source pointer.
type sourceOffset struct {
	off uintptr
	bit uint32
}

type volumeShape struct {
	name    path
	present uint32         // bit per source the type has
	offsets []sourceOffset // of the sources the type has

	// When the sources are consecutive pointer words (a struct of only
	// source pointers, as both kinds of VolumeSource are), they are read
	// as one array: wordsAt is the first word's offset, wordBits the
	// source bit of each word.
	wordsAt  uintptr
	wordBits []uint32
	secret   [numSources]path // name of the secret a source names, see secretSources
	cmName   path             // ConfigMap.Name

	projections path // Projected.Sources
	projection  projectionShape
}

// Projection kinds, in the order podReferencesAPIObjects tries them.
const (
	projConfigMap = iota
	projSecret
	projServiceAccountToken
	projClusterTrustBundle
	projPodCertificate
	projDownwardAPI
	numProjections
)

var projectionNames = [numProjections]string{"ConfigMap", "Secret", "ServiceAccountToken", "ClusterTrustBundle", "PodCertificate", "DownwardAPI"}

var projectionRefs = [numProjections]string{
	"configmaps (via projected volumes)", "secrets (via projected volumes)", "serviceaccounts (via projected volumes)",
	"clustertrustbundles", "podcertificates", "",
}

type projectionShape struct {
	kinds      [numProjections]path
	present    uint32
	secretName path // Secret.Name
	cmName     path // ConfigMap.Name
}

var mirrorPodShapes = &shapeCache[mirrorPodShape]{
	kind:  schema.GroupKind{Kind: "Pod"},
	build: buildMirrorPodShape,
}

func buildMirrorPodShape(r *resolver, t reflect.Type) *mirrorPodShape {
	s := &mirrorPodShape{
		meta:               objectMeta(r, t),
		nodeName:           r.field(t, reflect.String, "Spec", "NodeName"),
		serviceAccountName: r.field(t, reflect.String, "Spec", "ServiceAccountName"),
		imagePullSecrets:   r.field(t, reflect.Slice, "Spec", "ImagePullSecrets"),
		initContainers:     r.field(t, reflect.Slice, "Spec", "InitContainers"),
		containers:         r.field(t, reflect.Slice, "Spec", "Containers"),
		ephemeral:          r.field(t, reflect.Slice, "Spec", "EphemeralContainers"),
		resourceClaims:     r.field(t, reflect.Slice, "Spec", "ResourceClaims"),
		volumes:            r.field(t, reflect.Slice, "Spec", "Volumes"),
	}
	if r.err != nil {
		return nil
	}
	s.pullSecretName = r.field(elem(&s.imagePullSecrets), reflect.String, "Name")
	s.container = buildContainerShape(r, elem(&s.containers))
	if it := elem(&s.initContainers); r.err == nil && it != elem(&s.containers) {
		r.err = fmt.Errorf("init containers are %v, containers %v", it, elem(&s.containers))
	}
	s.ephemeralContainer = buildContainerShape(r, elem(&s.ephemeral))

	vt := elem(&s.volumes)
	v := &s.volume
	v.name = r.field(vt, reflect.String, "Name")
	for i, name := range sourceNames {
		if has(vt, name) {
			f := r.field(vt, reflect.Pointer, name)
			if r.err == nil && f.rest != nil {
				r.err = fmt.Errorf("%v reaches %s through a pointer", vt, name)
			}
			v.present |= 1 << i
			v.offsets = append(v.offsets, sourceOffset{off: f.off, bit: 1 << i})
		}
	}
	v.wordsAt, v.wordBits = consecutiveWords(v.offsets)
	for _, ss := range secretSources {
		if v.present&(1<<ss.src) != 0 && ss.name != nil {
			v.secret[ss.src] = r.field(vt, reflect.String, append([]string{sourceNames[ss.src]}, ss.name...)...)
		}
	}
	if v.present&(1<<srcConfigMap) != 0 {
		v.cmName = r.field(vt, reflect.String, "ConfigMap", "Name")
	}
	if v.present&(1<<srcProjected) != 0 {
		v.projections = r.field(vt, reflect.Slice, "Projected", "Sources")
		pt := elem(&v.projections)
		if r.err != nil {
			return nil
		}
		for i, name := range projectionNames {
			if has(pt, name) {
				v.projection.kinds[i] = r.field(pt, reflect.Pointer, name)
				v.projection.present |= 1 << i
			}
		}
		if v.projection.present&(1<<projSecret) != 0 {
			v.projection.secretName = r.field(pt, reflect.String, "Secret", "Name")
		}
		if v.projection.present&(1<<projConfigMap) != 0 {
			v.projection.cmName = r.field(pt, reflect.String, "ConfigMap", "Name")
		}
	}
	return s
}

func buildContainerShape(r *resolver, ct reflect.Type) containerShape {
	if r.err != nil {
		return containerShape{}
	}
	c := containerShape{
		env:     r.field(ct, reflect.Slice, "Env"),
		envFrom: r.field(ct, reflect.Slice, "EnvFrom"),
	}
	if r.err != nil {
		return containerShape{}
	}
	et, ft := elem(&c.env), elem(&c.envFrom)
	c.valueFrom = r.field(et, reflect.Pointer, "ValueFrom")
	if r.err != nil {
		return containerShape{}
	}
	vt := elem(&c.valueFrom)
	c.keySecretName = r.field(vt, reflect.String, "SecretKeyRef", "Name")
	c.keyConfigMapName = r.field(vt, reflect.String, "ConfigMapKeyRef", "Name")
	c.fromSecretName = r.field(ft, reflect.String, "SecretRef", "Name")
	c.fromConfigMap = r.field(ft, reflect.String, "ConfigMapRef", "Name")
	return c
}

// consecutiveWords returns the first offset and the bit of each word when
// the offsets, sorted, cover consecutive pointer-sized words; nil bits
// otherwise.
func consecutiveWords(offsets []sourceOffset) (uintptr, []uint32) {
	if len(offsets) == 0 {
		return 0, nil
	}
	sorted := slices.Clone(offsets)
	slices.SortFunc(sorted, func(a, b sourceOffset) int { return cmp.Compare(a.off, b.off) })
	const word = unsafe.Sizeof(unsafe.Pointer(nil))
	bits := make([]uint32, len(sorted))
	for i, s := range sorted {
		if s.off != sorted[0].off+uintptr(i)*word {
			return 0, nil
		}
		bits[i] = s.bit
	}
	return sorted[0].off, bits
}

// sourcesSet returns a bit per source the volume at v sets.
func (v *volumeShape) sourcesSet(vol unsafe.Pointer) uint32 {
	if v.wordBits != nil {
		words := unsafe.Slice((*unsafe.Pointer)(unsafe.Add(vol, v.wordsAt)), len(v.wordBits))
		var set uint32
		for i, w := range words {
			if w != nil {
				set |= v.wordBits[i]
			}
		}
		return set
	}
	// Some thirty loads per volume: each source is a pointer at a fixed
	// offset of the volume itself (checked when the shape was built).
	var set uint32
	for _, s := range v.offsets {
		if *(*unsafe.Pointer)(unsafe.Add(vol, s.off)) != nil {
			set |= s.bit
		}
	}
	return set
}

func (p *projectionShape) set(src unsafe.Pointer) uint32 {
	var set uint32
	for i := range numProjections {
		if p.present&(1<<i) != 0 && p.kinds[i].ptr(src) != nil {
			set |= 1 << i
		}
	}
	return set
}

// envNames reports whether the containers of the list at pod name a
// secret, and whether they name a config map, in their environment. One
// walk answers both: most env vars are plain values and cost one load.
func (c *containerShape) envNames(list *path, pod unsafe.Pointer) (secret, configMap bool) {
	data, n := list.slice(pod)
	for i := range n {
		ctr := list.at(data, i)
		env, ne := c.env.slice(ctr)
		for j := range ne {
			src := c.valueFrom.ptr(c.env.at(env, j))
			if src == nil {
				continue
			}
			secret = secret || c.keySecretName.str(src) != ""
			configMap = configMap || c.keyConfigMapName.str(src) != ""
		}
		from, nf := c.envFrom.slice(ctr)
		for j := range nf {
			f := c.envFrom.at(from, j)
			secret = secret || c.fromSecretName.str(f) != ""
			configMap = configMap || c.fromConfigMap.str(f) != ""
		}
	}
	return secret, configMap
}

func (s *mirrorPodShape) containersName(pod unsafe.Pointer) (secret, configMap bool) {
	s1, c1 := s.container.envNames(&s.initContainers, pod)
	s2, c2 := s.container.envNames(&s.containers, pod)
	s3, c3 := s.ephemeralContainer.envNames(&s.ephemeral, pod)
	return s1 || s2 || s3, c1 || c2 || c3
}

// referencesAPIObjects is podReferencesAPIObjects for an internal pod.
// The sources each volume sets are read once, into sets.
func (s *mirrorPodShape) referencesAPIObjects(pod unsafe.Pointer) (bool, string, error) {
	if s.serviceAccountName.str(pod) != "" {
		return true, "serviceaccounts", nil
	}
	vols, nv := s.volumes.slice(pod)
	var small [8]uint32
	sets := small[:0]
	if nv > len(small) {
		sets = make([]uint32, 0, nv)
	}
	for i := range nv {
		sets = append(sets, s.volume.sourcesSet(s.volumes.at(vols, i)))
	}
	envSecret, envConfigMap := s.containersName(pod)
	if envSecret || s.namesSecret(pod, vols, sets) {
		return true, "secrets", nil
	}
	if envConfigMap || s.namesConfigMap(vols, sets) {
		return true, "configmaps", nil
	}
	if _, n := s.resourceClaims.slice(pod); n > 0 {
		return true, "resourceclaims", nil
	}
	v := &s.volume
	for i, set := range sets {
		vol := s.volumes.at(vols, i)
		switch {
		case set&refFreeSources != 0:
			continue
		case set&(1<<srcConfigMap) != 0:
			return true, "configmaps (via configmap volumes)", nil
		case set&(1<<srcSecret) != 0:
			return true, "secrets (via secret volumes)", nil
		case set&(1<<srcCSI) != 0:
			return true, "csidrivers (via CSI volumes)", nil
		case set&(1<<srcGlusterfs) != 0:
			return true, "endpoints (via glusterFS volumes)", nil
		case set&(1<<srcPersistentVolumeClaim) != 0:
			return true, "persistentvolumeclaims", nil
		case set&(1<<srcEphemeral) != 0:
			return true, "persistentvolumeclaims (via ephemeral volumes)", nil
		case set&(1<<srcAzureFile) != 0:
			return true, "secrets (via azureFile volumes)", nil
		case set&(1<<srcProjected) != 0:
			srcs, ns := v.projections.slice(vol)
			for j := range ns {
				kinds := v.projection.set(v.projections.at(srcs, j))
				if kinds == 0 {
					return true, "", fmt.Errorf("unknown source for projected volume %q", v.name.str(vol))
				}
				for k := range numProjections {
					if kinds&(1<<k) != 0 {
						if k == projDownwardAPI {
							break
						}
						return true, projectionRefs[k], nil
					}
				}
			}
		default:
			return true, "", fmt.Errorf("unknown volume type for volume  %q", v.name.str(vol))
		}
	}
	return false, "", nil
}

func (s *mirrorPodShape) namesSecret(pod, vols unsafe.Pointer, sets []uint32) bool {
	data, n := s.imagePullSecrets.slice(pod)
	for i := range n {
		if s.pullSecretName.str(s.imagePullSecrets.at(data, i)) != "" {
			return true
		}
	}
	v := &s.volume
	for i, set := range sets {
		vol := s.volumes.at(vols, i)
		for _, ss := range secretSources {
			if set&(1<<ss.src) == 0 {
				continue
			}
			// The first source set decides, as in podNamesSecret.
			if ss.src == srcProjected {
				srcs, ns := v.projections.slice(vol)
				for j := range ns {
					if v.projection.secretName.typ != nil && v.projection.secretName.str(v.projections.at(srcs, j)) != "" {
						return true
					}
				}
			} else if v.secret[ss.src].str(vol) != "" {
				return true
			}
			break
		}
	}
	return false
}

func (s *mirrorPodShape) namesConfigMap(vols unsafe.Pointer, sets []uint32) bool {
	v := &s.volume
	for i, set := range sets {
		vol := s.volumes.at(vols, i)
		switch {
		case set&(1<<srcProjected) != 0:
			srcs, ns := v.projections.slice(vol)
			for j := range ns {
				if v.projection.cmName.typ != nil && v.projection.cmName.str(v.projections.at(srcs, j)) != "" {
					return true
				}
			}
		case set&(1<<srcConfigMap) != 0:
			if v.cmName.str(vol) != "" {
				return true
			}
		}
	}
	return false
}
