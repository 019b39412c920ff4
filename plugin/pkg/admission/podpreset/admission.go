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

// Package podpreset is the PodPreset admission plugin: when a pod is
// created it merges in the env, envFrom, volumes and volume mounts of every
// PodPreset of its namespace, and every ClusterPodPreset, whose selectors
// pick it.
//
// It is the plugin Kubernetes removed in 1.20 with its behaviour kept
// (create only, mirror pods and the exclude annotation skipped, all or
// nothing on conflict by default, the podpreset-<name> annotation) and its defects
// fixed: envFrom takes part in the conflict check and is never wiped or
// duplicated, presets apply in name order, they are defaulted like the pod
// before they are compared, a conflict is shown to whoever created the pod
// (a warning and an Event), and a pod is never admitted without its presets
// because the cache had not synced yet (until it has, pod creates are
// refused with an error clients retry).
//
// Beyond upstream:
//
//   - targeting: spec.containers and spec.initContainers pick the
//     containers a preset reaches, by name, or all but the named ones; a
//     ClusterPodPreset's spec.namespaceSelector picks the namespaces it
//     applies in;
//   - policies: spec.conflictPolicy says what a conflict with the pod or
//     another preset does: SkipAll (the default, upstream's all or
//     nothing), PodWins, PresetWins, or Reject, which refuses the pod;
//   - modes: spec.mode Enforce (the default) applies the preset; Warn and
//     Audit change nothing, but try the preset on the pod with the
//     enforced ones and record what it would have done in the
//     UnenforcedAnnotationKey audit annotation (and, for Warn, in a
//     warning to the client), so a preset can be tried before it is
//     enforced.
package podpreset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	genericinitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	settingsinformers "github.com/admitkit/admitkit/generated/informers/externalversions"
	"github.com/admitkit/admitkit/plugin/initializer"
	"github.com/admitkit/admitkit/plugin/internal/events"
	"github.com/admitkit/admitkit/plugin/internal/notsynced"
	"github.com/admitkit/admitkit/plugin/internal/objectname"
	"github.com/admitkit/admitkit/plugin/internal/versioned"
)

const (
	// PluginName is the name to give --enable-admission-plugins.
	PluginName = "PodPreset"

	annotationPrefix = "podpreset.admission.kubernetes.io"
	// ExcludeAnnotation, set to "true" on a pod, keeps every preset out of it.
	ExcludeAnnotation                = annotationPrefix + "/exclude"
	podPresetAnnotationPrefix        = annotationPrefix + "/podpreset-"
	clusterPodPresetAnnotationPrefix = annotationPrefix + "/clusterpodpreset-"

	podPresetKind        = "PodPreset"
	clusterPodPresetKind = "ClusterPodPreset"

	// conflictReason is the reason of the Event a conflict leaves in the
	// pod's namespace.
	conflictReason = "PodPresetConflict"
)

// Register registers the plugin. It takes no configuration.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) {
		return NewPlugin(), nil
	})
}

// Plugin is the PodPreset admission plugin.
type Plugin struct {
	*admission.Handler

	index      *presetIndex
	namespaces corev1listers.NamespaceLister
	client     kubernetes.Interface
	recorder   record.EventRecorder

	// watching is true once the index is fed by informers.
	watching bool
	// Used to watch presets without a settings informer factory.
	dynamicClient dynamic.Interface
	stop          <-chan struct{}

	synced    []cache.InformerSynced
	ready     atomic.Bool
	startOnce sync.Once
}

var (
	_ admission.MutationInterface                         = &Plugin{}
	_ admission.InitializationValidator                   = &Plugin{}
	_ initializer.WantsSettingsInformerFactory            = &Plugin{}
	_ genericinitializer.WantsExternalKubeInformerFactory = &Plugin{}
	_ genericinitializer.WantsExternalKubeClientSet       = &Plugin{}
	_ genericinitializer.WantsDynamicClient               = &Plugin{}
	_ genericinitializer.WantsDrainedNotification         = &Plugin{}
)

// NewPlugin returns a plugin that acts on pod creation.
func NewPlugin() *Plugin {
	registerMetrics()
	p := &Plugin{Handler: admission.NewHandler(admission.Create), index: newPresetIndex()}
	// A host that serves the plugin outside kube-apiserver (a webhook)
	// reports itself ready only once the caches are filled.
	p.SetReadyFunc(p.cachesSynced)
	return p
}

// SetSettingsInformerFactory feeds the plugin's preset index from a
// server's settings.k8s.io informer factory.
func (p *Plugin) SetSettingsInformerFactory(f settingsinformers.SharedInformerFactory) {
	p.feedIndex(f.Settings().V1alpha1().PodPresets().Informer())
	p.feedIndex(f.Settings().V1alpha1().ClusterPodPresets().Informer())
}

// feedIndex keeps the index in step with an informer's presets; the
// plugin is ready once the index has seen the informer's initial list.
func (p *Plugin) feedIndex(informer cache.SharedIndexInformer) {
	registration, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.index.upsert,
		UpdateFunc: func(_, obj interface{}) { p.index.upsert(obj) },
		DeleteFunc: p.index.remove,
	})
	if err != nil {
		// Only a stopped informer refuses a handler; the plugin then never
		// becomes ready, and says why.
		p.synced = append(p.synced, func() bool { return false })
		klog.ErrorS(err, "PodPreset admission cannot watch presets")
		return
	}
	p.watching = true
	p.synced = append(p.synced, registration.HasSynced)
}

// SetExternalKubeInformerFactory takes the namespace lister that
// ClusterPodPreset namespace selectors are matched through.
func (p *Plugin) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	namespaces := f.Core().V1().Namespaces()
	p.namespaces = namespaces.Lister()
	p.synced = append(p.synced, namespaces.Informer().HasSynced)
}

// SetExternalKubeClientSet takes the client that conflict Events are
// written with and that looks up a namespace the cache has not seen yet.
func (p *Plugin) SetExternalKubeClientSet(client kubernetes.Interface) { p.client = client }

// SetDynamicClient takes the loopback dynamic client that every
// kube-apiserver hands its plugins; without a settings informer factory the
// plugin watches presets through it.
func (p *Plugin) SetDynamicClient(client dynamic.Interface) { p.dynamicClient = client }

// SetDrainedNotification takes the channel that closes when the server
// shuts down, which stops everything the plugin runs in the background.
func (p *Plugin) SetDrainedNotification(stop <-chan struct{}) { p.stop = stop }

// ValidateInitialization fails when the plugin lacks something it needs,
// and otherwise starts the plugin.
func (p *Plugin) ValidateInitialization() error {
	if !p.watching && p.dynamicClient == nil {
		return errors.New("PodPreset requires a settings.k8s.io informer factory, or a dynamic client and a drained notification")
	}
	if p.stop == nil {
		return errors.New("PodPreset requires a drained notification to stop its event recorder and watches")
	}
	if p.namespaces == nil {
		return errors.New("PodPreset requires a namespace lister")
	}
	if p.client == nil {
		return errors.New("PodPreset requires a client")
	}
	p.startOnce.Do(p.start)
	return nil
}

// start is the one place the plugin starts goroutines: the Event
// broadcaster and, without a settings informer factory, the preset watches
// through the dynamic client. All of them end when the server drains.
func (p *Plugin) start() {
	p.recorder = events.NewRecorder(p.client, "podpreset-admission", p.stop)
	if !p.watching {
		p.watchThroughDynamicClient()
	}
}

var (
	podsResource = corev1.Resource("pods")
	podKind      = corev1.SchemeGroupVersion.WithKind("Pod").GroupKind()
)

// Admit merges the matching presets into a pod being created: it finds
// the presets that select the pod, applies them, and reports what they
// did.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	podMeta, err := podToAdmit(a)
	if podMeta == nil {
		return err
	}
	if err := p.checkSynced(ctx, a); err != nil {
		return err
	}
	seen := recordOf(a)
	if seen.evaluated.First() {
		podsEvaluated.Inc()
	}
	// Presets are looked up in the request's namespace: a pod sent without
	// metadata.namespace must not pick up another namespace's presets.
	presets, err := p.matchingPresets(ctx, a.GetNamespace(), podMeta.GetLabels())
	if err != nil || len(presets) == 0 {
		return err
	}
	obj := a.GetObject()
	pod, err := versionedPod(obj, o)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("Resource was marked with kind Pod but was unable to be converted: %v", err))
	}
	m := merge(pod, presets)
	var refused *refusal
	if errors.As(m.err, &refused) {
		return admission.NewForbidden(a, fmt.Errorf("%s refused by pod presets whose conflictPolicy is Reject: %w", podName(a, podMeta), refused.err))
	}
	p.report(ctx, a, podMeta, seen, m)
	if m.err != nil || len(m.applied) == 0 || pod == obj {
		return nil
	}
	if err := versioned.Back(pod, obj, o); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("converting the pod back after applying presets: %w", err))
	}
	return nil
}

// podToAdmit returns the metadata of the pod the request creates, or nil
// when the plugin leaves the request alone: not a pod create, a mirror pod
// (the kubelet's copy of a static pod, which must not reference anything a
// preset could bring in), or a pod that excludes presets.
func podToAdmit(a admission.Attributes) (metav1.Object, error) {
	if a.GetOperation() != admission.Create || a.GetSubresource() != "" || a.GetResource().GroupResource() != podsResource {
		return nil, nil
	}
	podMeta, err := meta.Accessor(a.GetObject())
	if err != nil {
		return nil, apierrors.NewBadRequest("Resource was marked with kind Pod but was unable to be converted")
	}
	annotations := podMeta.GetAnnotations()
	if _, mirror := annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return nil, nil
	}
	if annotations[ExcludeAnnotation] == "true" {
		return nil, nil
	}
	return podMeta, nil
}

// merged is what the matching presets made of a pod.
type merged struct {
	pod *corev1.Pod
	// presets are all that match; applied the enforced ones among them.
	presets, applied []*preset
	// before is the pod as it came, kept when some preset is in Warn or
	// Audit mode, to try it on.
	before *corev1.Pod
	// err is the enforced presets' conflict, which left them all out (a
	// *refusal when it refuses the pod).
	err error
}

// merge applies the enforced presets of presets to pod.
func merge(pod *corev1.Pod, presets []*preset) merged {
	m := merged{pod: pod, presets: presets, applied: enforced(presets)}
	if len(m.applied) < len(presets) {
		m.before = pod.DeepCopy()
	}
	if len(m.applied) > 0 {
		m.err = applyPresets(pod, m.applied)
	}
	return m
}

// report counts and tells what the presets did to the pod, once per
// request: the presets in Warn or Audit mode are tried on the pod as it
// was before and compared with what the enforced ones made of it (a report
// of what switching one to Enforce would do to this very pod); a conflict
// is shown to whoever created the pod; applied presets are counted.
func (p *Plugin) report(ctx context.Context, a admission.Attributes, podMeta metav1.Object, seen *requestRecord, m merged) {
	if m.before != nil && seen.unenforced.First() {
		if trials := tryUnenforced(m.before, m.pod, m.presets, m.err); len(trials) > 0 {
			reportUnenforced(ctx, a, podName(a, podMeta), trials)
		}
	}
	if m.err != nil {
		if seen.conflict.First() {
			conflicts.Inc()
			p.reportConflict(ctx, a, podMeta, m.applied, m.err)
		}
		return
	}
	if len(m.applied) == 0 {
		return
	}
	if seen.injected.First() {
		podsInjected.Inc()
	}
	for _, preset := range m.applied {
		if seen.applied.First(preset.annotation) {
			presetsApplied.WithLabelValues(preset.kind).Inc()
		}
	}
	// The preset names are formatted only when they will be logged.
	if logger := klog.FromContext(ctx).V(4); logger.Enabled() {
		logger.Info("Applied pod presets", "pod", podName(a, podMeta), "presets", presetNames(m.applied))
	}
}

// checkSynced refuses, with an error clients retry, a pod create that
// arrives before the preset caches are filled: admitting it would silently
// leave its presets out.
func (p *Plugin) checkSynced(ctx context.Context, a admission.Attributes) error {
	if p.ready.Load() {
		return nil
	}
	if !p.cachesSynced() {
		notSyncedRefusals.Inc()
		klog.FromContext(ctx).V(2).Info("Pod create refused until the PodPreset cache has synced", "namespace", a.GetNamespace())
		return notsynced.Error("the PodPreset admission plugin has not synced its PodPreset cache yet; retry the create")
	}
	p.ready.Store(true)
	return nil
}

// cachesSynced reports whether every cache the plugin reads has seen its
// first list.
func (p *Plugin) cachesSynced() bool {
	for _, synced := range p.synced {
		if !synced() {
			return false
		}
	}
	return true
}

// matchingPresets returns the presets that select a pod with podLabels in
// namespace: the namespace's PodPresets by name, then the ClusterPodPresets
// by name. The order only decides where appended items go, but it is the
// same on every call, unlike upstream's cache order.
func (p *Plugin) matchingPresets(ctx context.Context, namespace string, podLabels map[string]string) ([]*preset, error) {
	// Most pods match a few presets: the lookups fill buffers on the stack.
	var namespacedBuf, clusterBuf [8]*compiledPreset
	namespaced, err := p.index.set(namespace).selecting(podLabels, namespacedBuf[:0])
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("filtering pod presets failed: %w", err))
	}
	cluster, err := p.index.set(clusterNamespace).selecting(podLabels, clusterBuf[:0])
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("filtering cluster pod presets failed: %w", err))
	}
	if len(namespaced) == 0 && len(cluster) == 0 {
		return nil, nil
	}

	matched := make([]*preset, 0, len(namespaced)+len(cluster))
	for _, c := range namespaced {
		matched = append(matched, &c.preset)
	}
	sortByName(matched)
	var namespaceLabels map[string]string
	namespaceLoaded := false
	clusterStart := len(matched)
	for _, c := range cluster {
		if !c.namespaceSelector.selectsEverything() {
			if !namespaceLoaded {
				if namespaceLabels, err = p.namespaceLabels(ctx, namespace); err != nil {
					return nil, err
				}
				namespaceLoaded = true
			}
			if !c.namespaceSelector.matches(namespaceLabels) {
				continue
			}
		}
		matched = append(matched, &c.preset)
	}
	sortByName(matched[clusterStart:])
	return matched, nil
}

func sortByName(presets []*preset) {
	slices.SortFunc(presets, func(a, b *preset) int { return strings.Compare(a.name, b.name) })
}

// namespaceLabels reads a namespace's labels from the cache, or from the
// API server when the namespace is newer than the cache.
func (p *Plugin) namespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	ns, err := p.namespaces.Get(name)
	if apierrors.IsNotFound(err) {
		ns, err = p.client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("looking up namespace %q for ClusterPodPreset namespace selectors: %w", name, err))
	}
	return ns.Labels, nil
}

// versionedPod returns the pod as a core/v1 Pod. Inside kube-apiserver the
// admission chain hands plugins its internal Pod type, which this module
// cannot import; the chain's converter turns it into the versioned one.
func versionedPod(obj runtime.Object, o admission.ObjectInterfaces) (*corev1.Pod, error) {
	return versioned.As[corev1.Pod](obj, corev1.SchemeGroupVersion.WithKind("Pod"), o)
}

// reportConflict tells whoever created the pod why its presets were left
// out: an admission warning their client prints, a Warning Event in the
// pod's namespace (not on a dry run, which must have no side effects), and
// a log line for the cluster's operators.
func (p *Plugin) reportConflict(ctx context.Context, a admission.Attributes, podMeta metav1.Object, presets []*preset, err error) {
	name := podName(a, podMeta)
	message := fmt.Sprintf("pod presets not applied to %s because they conflict (none of %s was applied): %v", name, strings.Join(presetNames(presets), ", "), err)
	warning.AddWarning(ctx, "", message)
	klog.FromContext(ctx).V(2).Info("Pod presets not applied because they conflict", "pod", name, "presets", presetNames(presets), "err", err)
	if a.IsDryRun() || p.recorder == nil {
		return
	}
	p.recorder.Event(eventTarget(a.GetNamespace(), podMeta), corev1.EventTypeWarning, conflictReason, message)
}

// podName names the pod in messages (see package objectname). Built only
// for a message, since most pods get none.
func podName(a admission.Attributes, podMeta metav1.Object) string {
	return objectname.Of(podKind, a.GetNamespace(), podMeta.GetName(), podMeta.GetGenerateName())
}

// eventTarget is the object an Event about a pod is about. A pod made from
// generateName has no name yet: the Event is then about its prefix,
// trimmed so that the Event named after it stays a valid name.
func eventTarget(namespace string, podMeta metav1.Object) *corev1.ObjectReference {
	name := podMeta.GetName()
	if name == "" {
		name = strings.TrimRight(podMeta.GetGenerateName(), "-.")
	}
	if name == "" {
		name = "pod"
	}
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: namespace, Name: name}
}

func presetNames(presets []*preset) []string {
	names := make([]string, len(presets))
	for i, p := range presets {
		names[i] = p.String()
	}
	return names
}
