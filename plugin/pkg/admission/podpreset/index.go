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

package podpreset

import (
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

// presetIndex holds every preset, compiled and defaulted, keyed so that a
// pod create looks at the presets that can select it and no others. It is
// kept up to date by informer event handlers: the work a preset needs is
// done once per preset version, not once per pod.
type presetIndex struct {
	mu sync.RWMutex
	// sets maps a namespace to its PodPresets; clusterNamespace holds the
	// ClusterPodPresets. A set is never changed once published: an update
	// builds a new one, so readers use it without holding the lock.
	sets map[string]*presetSet
	// counts is how many presets of each kind the index holds.
	counts map[string]int
	// defaults defaults a copy of a PodPreset or ClusterPodPreset the way
	// the API server defaulted the pod, so that an item the pod already has
	// is recognised as the same item.
	defaults func(runtime.Object)
}

// clusterNamespace keys ClusterPodPresets; no namespace has an empty name.
const clusterNamespace = ""

// presetSet is the presets of one namespace (or the cluster's).
type presetSet struct {
	byName map[string]*compiledPreset
	// byLabel holds the presets whose selector requires a label, under the
	// first such label: only a pod carrying that label and value can match.
	byLabel map[labelPair][]*compiledPreset
	// rest is every other preset, tried on every pod: empty selectors,
	// selectors of expressions only, and presets that failed to compile.
	rest []*compiledPreset
}

// compiledPreset is a preset ready for admission.
type compiledPreset struct {
	preset
	selector          selector
	namespaceSelector selector // ClusterPodPresets only
	// err is why the preset's selectors do not compile. Such a preset is a
	// candidate for every pod of its namespace, and rejects their creation,
	// as upstream did: admitting them could silently miss a preset.
	err error
}

// defaultingScheme holds the settings.k8s.io/v1alpha1 defaulters.
var defaultingScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(settingsv1alpha1.AddToScheme(s))
	return s
}()

func newPresetIndex() *presetIndex {
	return &presetIndex{sets: map[string]*presetSet{}, counts: map[string]int{}, defaults: defaultingScheme.Default}
}

// compile makes a preset from its defaulted spec, which it keeps.
func compile(kind string, m *metav1.ObjectMeta, spec settingsv1alpha1.PodPresetSpec, namespaceSelector *metav1.LabelSelector) *compiledPreset {
	c := &compiledPreset{preset: preset{kind: kind, name: m.Name, resourceVersion: m.ResourceVersion, spec: spec,
		containers: newContainerPicker(spec.Containers), initContainers: newContainerPicker(spec.InitContainers)}}
	c.annotation = c.annotationKey()
	c.selector, c.err = compilePresetSelector(&c.spec.Selector)
	if c.err != nil {
		c.err = fmt.Errorf("spec.selector: %w", c.err)
		return c
	}
	if namespaceSelector != nil {
		if c.namespaceSelector, c.err = compilePresetSelector(namespaceSelector); c.err != nil {
			c.err = fmt.Errorf("spec.namespaceSelector: %w", c.err)
		}
	}
	return c
}

// upsert adds or replaces a PodPreset or ClusterPodPreset.
func (x *presetIndex) upsert(obj interface{}) {
	// The informer's object is shared: default a copy of its spec, as a
	// whole object so that every defaulter of the kind runs, and keep the
	// copy's spec.
	switch pp := obj.(type) {
	case *settingsv1alpha1.PodPreset:
		defaulted := &settingsv1alpha1.PodPreset{Spec: *pp.Spec.DeepCopy()}
		x.defaults(defaulted)
		x.update(pp.Namespace, pp.Name, compile(podPresetKind, &pp.ObjectMeta, defaulted.Spec, nil))
	case *settingsv1alpha1.ClusterPodPreset:
		defaulted := &settingsv1alpha1.ClusterPodPreset{Spec: *pp.Spec.DeepCopy()}
		x.defaults(defaulted)
		x.update(clusterNamespace, pp.Name, compile(clusterPodPresetKind, &pp.ObjectMeta, defaulted.Spec.PodPresetSpec, &defaulted.Spec.NamespaceSelector))
	}
}

// remove drops a deleted preset, also when the informer only knows its key.
func (x *presetIndex) remove(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	switch pp := obj.(type) {
	case *settingsv1alpha1.PodPreset:
		x.update(pp.Namespace, pp.Name, nil)
	case *settingsv1alpha1.ClusterPodPreset:
		x.update(clusterNamespace, pp.Name, nil)
	}
}

// update publishes a new set for namespace with name replaced by c, or
// removed when c is nil.
func (x *presetIndex) update(namespace, name string, c *compiledPreset) {
	x.mu.Lock()
	defer x.mu.Unlock()
	byName := map[string]*compiledPreset{}
	if old := x.sets[namespace]; old != nil {
		for n, p := range old.byName {
			byName[n] = p
		}
	}
	kind := podPresetKind
	if namespace == clusterNamespace {
		kind = clusterPodPresetKind
	}
	if _, had := byName[name]; had {
		x.counts[kind]--
	}
	if c == nil {
		delete(byName, name)
	} else {
		byName[name] = c
		x.counts[kind]++
	}
	presetsIndexed.WithLabelValues(kind).Set(float64(x.counts[kind]))
	if len(byName) == 0 {
		delete(x.sets, namespace)
		return
	}
	x.sets[namespace] = newPresetSet(byName)
}

func newPresetSet(byName map[string]*compiledPreset) *presetSet {
	set := &presetSet{byName: byName, byLabel: map[labelPair][]*compiledPreset{}}
	for _, p := range byName {
		if p.err == nil && len(p.selector.labels) > 0 {
			first := p.selector.labels[0]
			set.byLabel[first] = append(set.byLabel[first], p)
		} else {
			set.rest = append(set.rest, p)
		}
	}
	return set
}

func (x *presetIndex) set(namespace string) *presetSet {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.sets[namespace]
}

// selecting appends to out the presets of the set whose selector selects a
// pod with podLabels, looking only at the presets filed under one of its
// labels and at the rest. A preset whose selectors did not compile is an
// error: it might have selected the pod.
func (s *presetSet) selecting(podLabels map[string]string, out []*compiledPreset) ([]*compiledPreset, error) {
	if s == nil {
		return out, nil
	}
	for _, p := range s.rest {
		if p.err != nil {
			return nil, fmt.Errorf("%s: %w", p, p.err)
		}
		if p.selector.matches(podLabels) {
			out = append(out, p)
		}
	}
	if len(s.byLabel) == 0 {
		return out, nil
	}
	for key, value := range podLabels {
		for _, p := range s.byLabel[labelPair{key, value}] {
			if p.selector.matches(podLabels) {
				out = append(out, p)
			}
		}
	}
	return out, nil
}
