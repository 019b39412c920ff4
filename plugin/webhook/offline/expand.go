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

package offline

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	"github.com/davecgh/go-spew/spew"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
)

// podOf returns the pod the controller of an admitted workload would
// create from its template, as the controller names and labels it (what the controller
// learns only from the API, a uid or an ordinal beyond the first, is
// left out), or nil for an object that is no workload.
func podOf(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	template, generateName, name, labels, err := templateOf(u)
	if err != nil || template == nil {
		return nil, err
	}
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: *template.ObjectMeta.DeepCopy(),
		Spec:       *template.Spec.DeepCopy(),
	}
	pod.Namespace, pod.GenerateName, pod.Name = u.GetNamespace(), generateName, name
	for k, v := range labels {
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[k] = v
	}
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pod)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: out}, nil
}

// templateOf returns the pod template of a workload, the generateName or
// name of its pods and the labels its controller adds to them.
func templateOf(u *unstructured.Unstructured) (*corev1.PodTemplateSpec, string, string, map[string]string, error) {
	name := u.GetName()
	switch u.GroupVersionKind() {
	case appsv1.SchemeGroupVersion.WithKind("Deployment"):
		d := &appsv1.Deployment{}
		if err := fromUnstructured(u, d); err != nil {
			return nil, "", "", nil, err
		}
		// The ReplicaSet is named after the template's hash, and its pods
		// carry the hash as a label.
		hash := PodTemplateHash(&d.Spec.Template, d.Status.CollisionCount)
		return &d.Spec.Template, fmt.Sprintf("%s-%s-", name, hash), "", map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: hash}, nil
	case appsv1.SchemeGroupVersion.WithKind("ReplicaSet"):
		rs := &appsv1.ReplicaSet{}
		err := fromUnstructured(u, rs)
		return &rs.Spec.Template, name + "-", "", nil, err
	case appsv1.SchemeGroupVersion.WithKind("DaemonSet"):
		ds := &appsv1.DaemonSet{}
		err := fromUnstructured(u, ds)
		return &ds.Spec.Template, name + "-", "", nil, err
	case appsv1.SchemeGroupVersion.WithKind("StatefulSet"):
		ss := &appsv1.StatefulSet{}
		if err := fromUnstructured(u, ss); err != nil {
			return nil, "", "", nil, err
		}
		return statefulSetPod(ss)
	case batchv1.SchemeGroupVersion.WithKind("Job"):
		job := &batchv1.Job{}
		if err := fromUnstructured(u, job); err != nil {
			return nil, "", "", nil, err
		}
		template := &job.Spec.Template
		// kube-apiserver's Job strategy labels the stored template with the
		// Job's name, under both keys, where the template sets neither (and
		// with its uid, which offline does not know); the Job controller
		// gives each pod its tracking finalizer.
		if !ptr.Deref(job.Spec.ManualSelector, false) {
			for _, key := range []string{legacyJobNameLabel, batchv1.JobNameLabel} {
				if _, set := template.Labels[key]; !set {
					if template.Labels == nil {
						template.Labels = map[string]string{}
					}
					template.Labels[key] = name
				}
			}
		}
		template.Finalizers = append(template.Finalizers, batchv1.JobTrackingFinalizer)
		return template, name + "-", "", nil, nil
	case batchv1.SchemeGroupVersion.WithKind("CronJob"):
		cj := &batchv1.CronJob{}
		if err := fromUnstructured(u, cj); err != nil {
			return nil, "", "", nil, err
		}
		// A run's Job is named after the cron job and its scheduled time,
		// which offline is not known: its pods are "<cronjob>-...".
		return &cj.Spec.JobTemplate.Spec.Template, name + "-", "", nil, nil
	}
	return nil, "", "", nil, nil
}

// statefulSetPod is the template, generateName, name and labels of the
// first replica of a StatefulSet, as its controller makes it: named after
// the first ordinal, with that name as hostname and the set's service as
// subdomain, a volume for each claim template in place of a volume of its
// name, and labelled with its name, ordinal and the set's revision.
func statefulSetPod(ss *appsv1.StatefulSet) (*corev1.PodTemplateSpec, string, string, map[string]string, error) {
	revision, err := statefulSetRevision(ss)
	if err != nil {
		return nil, "", "", nil, err
	}
	ordinal := 0
	if ss.Spec.Ordinals != nil {
		ordinal = int(ss.Spec.Ordinals.Start)
	}
	name := fmt.Sprintf("%s-%d", ss.Name, ordinal)
	template := &ss.Spec.Template
	template.Spec.Hostname, template.Spec.Subdomain = name, ss.Spec.ServiceName
	// The controller puts the claims' volumes first, in the order of a
	// map, so that of several claims any order is one it may give.
	var volumes []corev1.Volume
	claims := map[string]bool{}
	for _, claim := range ss.Spec.VolumeClaimTemplates {
		claims[claim.Name] = true
		volumes = append(volumes, corev1.Volume{Name: claim.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: fmt.Sprintf("%s-%s", claim.Name, name)}}})
	}
	for _, v := range template.Spec.Volumes {
		if !claims[v.Name] {
			volumes = append(volumes, v)
		}
	}
	template.Spec.Volumes = volumes
	return template, ss.Name + "-", name, map[string]string{
		appsv1.StatefulSetPodNameLabel:        name,
		appsv1.PodIndexLabel:                  strconv.Itoa(ordinal),
		appsv1.ControllerRevisionHashLabelKey: revision,
	}, nil
}

// statefulSetRevision is the name of the first ControllerRevision the
// StatefulSet controller makes of ss, which labels its pods: the set's name
// and FNV-1 (32 bit) of the revision's patch (the set's template as JSON,
// keys sorted, marked "$patch": "replace") followed by its collision count
// in decimal, written in the alphabet of generated names.
func statefulSetRevision(ss *appsv1.StatefulSet) (string, error) {
	data, err := json.Marshal(ss)
	if err != nil {
		return "", err
	}
	var set struct {
		Spec struct {
			Template map[string]any `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return "", err
	}
	if set.Spec.Template == nil {
		set.Spec.Template = map[string]any{}
	}
	set.Spec.Template["$patch"] = "replace"
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": set.Spec.Template}})
	if err != nil {
		return "", err
	}
	h := fnv.New32()
	_, _ = h.Write(patch)
	_, _ = h.Write([]byte(strconv.FormatInt(int64(ptr.Deref(ss.Status.CollisionCount, 0)), 10)))
	prefix := ss.Name
	// A revision's name is at most 253 characters.
	if len(prefix) > 223 {
		prefix = prefix[:223]
	}
	return prefix + "-" + rand.SafeEncodeString(fmt.Sprint(h.Sum32())), nil
}

// legacyJobNameLabel is the older of the two labels naming a Job's pods'
// Job, which kube-apiserver still writes.
const legacyJobNameLabel = "job-name"

// templatePrinter prints a template the way the deployment controller's
// hash reads it: every field, map keys sorted, no String methods.
var templatePrinter = spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true, SpewKeys: true}

// PodTemplateHash is the pod-template-hash the deployment controller gives
// the ReplicaSet of a Deployment's template, and its pods: FNV-1a (32 bit)
// of the template as go-spew prints it, followed by the collision count
// (little-endian, in eight bytes) when there is one, written in the
// alphabet of generated names.
func PodTemplateHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	templatePrinter.Fprintf(h, "%#v", *template)
	if collisionCount != nil {
		var count [8]byte
		binary.LittleEndian.PutUint32(count[:], uint32(*collisionCount))
		_, _ = h.Write(count[:])
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}
