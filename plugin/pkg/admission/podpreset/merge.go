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
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
)

// preset is one PodPreset or ClusterPodPreset that selects the pod, with
// its spec defaulted the way kube-apiserver defaults the pod's own fields.
type preset struct {
	kind            string
	name            string
	resourceVersion string
	// annotation is annotationKey(), kept to save building it per pod.
	annotation string
	spec       settingsv1alpha1.PodPresetSpec
	// containers and initContainers are spec.containers and
	// spec.initContainers compiled.
	containers, initContainers containerPicker
}

func (p *preset) String() string { return fmt.Sprintf("%s %q", p.kind, p.name) }

// yields is true of a preset whose conflicting items give way.
func (p *preset) yields() bool {
	return p.spec.ConflictPolicy == settingsv1alpha1.ConflictPolicyPodWins
}

// enforces is true of a preset whose items replace the pod's own.
func (p *preset) enforces() bool {
	return p.spec.ConflictPolicy == settingsv1alpha1.ConflictPolicyPresetWins
}

// rejects is true of a preset whose conflicts refuse the pod.
func (p *preset) rejects() bool {
	return p.spec.ConflictPolicy == settingsv1alpha1.ConflictPolicyReject
}

// containerPicker is a ContainerSelector ready for lookups. Its zero value
// picks every container, as an unset selector does.
type containerPicker struct {
	set     bool
	names   map[string]struct{}
	exclude bool
}

func newContainerPicker(s *settingsv1alpha1.ContainerSelector) containerPicker {
	if s == nil {
		return containerPicker{}
	}
	c := containerPicker{set: true, exclude: s.Exclude, names: make(map[string]struct{}, len(s.Names))}
	for _, name := range s.Names {
		c.names[name] = struct{}{}
	}
	return c
}

func (c *containerPicker) picks(name string) bool {
	if !c.set {
		return true
	}
	_, named := c.names[name]
	return named != c.exclude
}

// annotationKey is where the pod records that this preset was applied.
func (p *preset) annotationKey() string {
	if p.kind == clusterPodPresetKind {
		return clusterPodPresetAnnotationPrefix + p.name
	}
	return podPresetAnnotationPrefix + p.name
}

// listKey is one way of identifying an item of a merged list: two items
// with the same key must be the same item, or the presets conflict.
type listKey[T any] struct {
	of       func(*T) itemKey
	describe func(*T) string
}

// itemKey is the value of a listKey. Names, paths and the parts of an
// envFrom source are strings; the widest key (envFrom) has three.
type itemKey struct{ a, b, c string }

func (k listKey[T]) same(a, b *T) bool { return k.of(a) == k.of(b) }

// list describes one of the lists a preset merges into a pod.
type list[T any] struct {
	items func(*settingsv1alpha1.PodPresetSpec) []T
	keys  []listKey[T]
	// deepCopyInto gives the pod its own copy of an item: the preset's is
	// cached and shared by every pod it is merged into.
	deepCopyInto func(in, out *T)
}

// conflict is a conflict that no preset's policy resolved: the pod gets
// none of its presets, or with reject, is refused.
type conflict struct {
	err    error
	reject bool
}

// mergeList merges every preset's items after the original ones. An item
// equal to one already there is skipped, so merging twice gives the same
// list. An item that shares a key with a different one is a conflict,
// which the presets' policies settle:
//
//   - against the pod's own item, the preset's policy decides: PodWins
//     keeps the pod's, PresetWins puts the preset's in its place, SkipAll
//     and Reject make it a conflict;
//   - against another preset's item, a PodWins preset gives way (between
//     two PodWins presets, the first in order keeps its item); when
//     neither gives way, it is a conflict, which refuses the pod if either
//     preset's policy is Reject.
//
// PresetWins items are placed first, then those of SkipAll and Reject
// presets, then PodWins ones, so that who gives way never depends on
// names; appended items still end up in preset order, then item order.
// original is never modified: the result is a new slice once anything
// changes, and original itself when nothing does.
//
// Items are found by key through maps built once per merge, so a pod and a
// preset of n items each cost O(n), not O(n²): both are the namespace
// user's to make large.
func mergeList[T any](o owner, original []T, presets []*preset, l list[T]) ([]T, []conflict) {
	total := countItems(presets, l)
	if total == 0 {
		return original, nil
	}
	m := &merger[T]{o: o, l: l, presets: presets, base: original, merged: original, total: total}
	m.placeEnforced()
	m.index()
	for pi, p := range presets {
		if !p.yields() && !p.enforces() {
			m.add(pi)
		}
	}
	for pi, p := range presets {
		if p.yields() {
			m.add(pi)
		}
	}
	m.sortAppended()
	return m.merged, m.conflicts
}

// merger is the state of one mergeList.
type merger[T any] struct {
	o       owner
	l       list[T]
	presets []*preset
	total   int
	// base is the pod's items, with PresetWins items in place of those
	// they replace; merged is base followed by the appended items.
	base, merged []T
	// placedBy maps an index of base to the preset whose item replaced the
	// pod's there.
	placedBy map[int]int
	// tags[i] is the index of the preset that appended merged[len(base)+i];
	// kept only when there are several presets.
	tags []int32
	// tagBuf holds the tags of a list of up to linearSearchMax items, so
	// that short lists, most of them, allocate none: ntags of them.
	tagBuf [linearSearchMax]int32
	ntags  int
	// own is true once merged no longer aliases the pod's slice.
	own bool
	// at[k] holds, for each value of key k, the first item of merged that
	// has it: the one a linear search finds. Lists of up to
	// linearSearchMax items have no maps (most pods and presets have a
	// handful of items, for which maps cost more than they save): they are
	// searched through short, which holds their keys, short[k][j] being
	// key k of merged[j], so a search calls no key function.
	at        []map[itemKey]int
	short     [maxKeys][linearSearchMax]itemKey
	conflicts []conflict
}

// maxKeys is the most keys a list has (a mount has two).
const maxKeys = 2

// index indexes merged by every key.
func (m *merger[T]) index() {
	if len(m.merged)+m.total > linearSearchMax {
		m.at = make([]map[itemKey]int, len(m.l.keys))
		for k, key := range m.l.keys {
			m.at[k] = make(map[itemKey]int, len(m.merged)+m.total)
			for j := range m.merged {
				addIfAbsent(m.at[k], key.of(&m.merged[j]), j)
			}
		}
		return
	}
	for k, key := range m.l.keys {
		for j := range m.merged {
			m.short[k][j] = key.of(&m.merged[j])
		}
	}
}

// find returns the first item of merged whose key k is v.
func (m *merger[T]) find(k int, v itemKey) (int, bool) {
	if m.at != nil {
		j, ok := m.at[k][v]
		return j, ok
	}
	for j, have := range m.short[k][:len(m.merged)] {
		if have == v {
			return j, true
		}
	}
	return 0, false
}

// source is the preset whose item merged[j] is, or nil for the pod's own.
func (m *merger[T]) source(j int) *preset {
	if j < len(m.base) {
		if pi, ok := m.placedBy[j]; ok {
			return m.presets[pi]
		}
		return nil
	}
	if len(m.presets) == 1 {
		return m.presets[0]
	}
	return m.presets[m.appendedBy()[j-len(m.base)]]
}

// keysOf returns the value of every key of item.
func (m *merger[T]) keysOf(item *T) (keys [maxKeys]itemKey) {
	for k, key := range m.l.keys {
		keys[k] = key.of(item)
	}
	return keys
}

// append adds a copy of preset pi's item, whose keys are keys, at the end
// of merged.
func (m *merger[T]) append(pi int, item *T, keys *[maxKeys]itemKey) {
	if !m.own {
		// The first item appended: make room for every item the presets
		// could add, so the list is allocated once.
		merged := make([]T, len(m.merged), len(m.merged)+m.total)
		copy(merged, m.merged)
		m.merged, m.own = merged, true
	}
	// No key of an appended item is in the maps yet (or it would have
	// been a duplicate or a conflict).
	// placeEnforced appends before index, which then reads every key.
	for k := range m.l.keys {
		switch {
		case m.at != nil:
			m.at[k][keys[k]] = len(m.merged)
		case len(m.merged) < linearSearchMax:
			m.short[k][len(m.merged)] = keys[k]
		}
	}
	n := len(m.merged)
	m.merged = m.merged[:n+1]
	m.l.deepCopyInto(item, &m.merged[n])
	if len(m.presets) > 1 {
		if m.total <= linearSearchMax {
			m.tagBuf[m.ntags] = int32(pi)
			m.ntags++
		} else {
			if m.tags == nil {
				m.tags = make([]int32, 0, m.total)
			}
			m.tags = append(m.tags, int32(pi))
		}
	}
}

// add merges preset pi's items into merged.
func (m *merger[T]) add(pi int) {
	p := m.presets[pi]
	items := m.l.items(&p.spec)
	for i := range items {
		item := &items[i]
		keys := m.keysOf(item)
		var found sameKeys[T]
		for k := range m.l.keys {
			if j, ok := m.find(k, keys[k]); ok {
				found[k] = sameKey[T]{item: &m.merged[j], at: j}
			}
		}
		if p.yields() {
			// Whatever is there, pod's or preset's, stays.
			if found.any() {
				continue
			}
		}
		duplicate, differs := m.compare(item, &found)
		for k, d := range differs {
			if !d {
				continue
			}
			where := "in " + m.o.String()
			reject := p.rejects()
			if origin := m.source(found[k].at); origin != nil {
				where = "from " + origin.String()
				reject = reject || origin.rejects()
			}
			m.conflicts = append(m.conflicts, conflict{
				err:    fmt.Errorf("%s: %s conflicts with the one %s", p, m.l.keys[k].describe(item), where),
				reject: reject,
			})
		}
		if !duplicate && !differs.any() {
			m.append(pi, item, &keys)
		}
	}
}

// sameKey is an item that has the same value of a key as the one merged,
// and where it is; nil when there is none.
type sameKey[T any] struct {
	item *T
	at   int
}

// sameKeys are the sameKey of every key of a list.
type sameKeys[T any] [maxKeys]sameKey[T]

func (s *sameKeys[T]) any() bool {
	for _, k := range s {
		if k.item != nil {
			return true
		}
	}
	return false
}

// differing says, key by key, whether an item differs from the one that
// has the same value of the key.
type differing [maxKeys]bool

func (d differing) any() bool { return d != differing{} }

// compare checks item against the items found with the same keys: it is a
// duplicate when one of them is equal to it, and conflicts with each one
// that differs. The one rule of duplicates and conflicts for every phase
// of the merge.
func (m *merger[T]) compare(item *T, found *sameKeys[T]) (duplicate bool, differs differing) {
	for k, f := range found {
		if f.item == nil {
			continue
		}
		if apiequality.Semantic.DeepEqual(*f.item, *item) {
			duplicate = true
		} else {
			differs[k] = true
		}
	}
	return duplicate, differs
}

// claim is an item of a PresetWins preset, to be put into the list.
type claim[T any] struct {
	pi     int
	item   *T
	placed bool
}

// claims are the items of PresetWins presets, by every key.
type claims[T any] struct {
	list  []claim[T]
	byKey []map[itemKey]int
}

// sameKeys returns the claims that share a key with item.
func (cs *claims[T]) sameKeys(keys []listKey[T], item *T) sameKeys[T] {
	var found sameKeys[T]
	for k, key := range keys {
		if c, ok := cs.byKey[k][key.of(item)]; ok {
			found[k] = sameKey[T]{item: cs.list[c].item, at: c}
		}
	}
	return found
}

// placeEnforced puts the items of PresetWins presets into the list before
// any other preset's: one that shares a key with a different item of the
// pod takes that item's place (and drops any further such item), the rest
// are appended. Two PresetWins presets that disagree cannot both win: a
// conflict, as with presets that set no policy.
func (m *merger[T]) placeEnforced() {
	cs := m.claimEnforced()
	if len(cs.list) == 0 {
		return
	}
	m.replaceClaimed(&cs)
	for _, c := range cs.list {
		if !c.placed {
			keys := m.keysOf(c.item)
			m.append(c.pi, c.item, &keys)
		}
	}
}

// claimEnforced collects the items of PresetWins presets, leaving out
// duplicates and reporting conflicts between them.
func (m *merger[T]) claimEnforced() claims[T] {
	var cs claims[T]
	for pi, p := range m.presets {
		if !p.enforces() {
			continue
		}
		items := m.l.items(&p.spec)
		for i := range items {
			if cs.byKey == nil {
				cs.byKey = make([]map[itemKey]int, len(m.l.keys))
				for k := range cs.byKey {
					cs.byKey[k] = map[itemKey]int{}
				}
			}
			item := &items[i]
			found := cs.sameKeys(m.l.keys, item)
			duplicate, differs := m.compare(item, &found)
			for k, d := range differs {
				if d {
					m.conflicts = append(m.conflicts, conflict{
						err: fmt.Errorf("%s: %s conflicts with the one from %s", p, m.l.keys[k].describe(item), m.presets[cs.list[found[k].at].pi]),
					})
				}
			}
			if duplicate || differs.any() {
				continue
			}
			for k, key := range m.l.keys {
				cs.byKey[k][key.of(item)] = len(cs.list)
			}
			cs.list = append(cs.list, claim[T]{pi: pi, item: item})
		}
	}
	return cs
}

// replaceClaimed puts each claim in the place of the first item of the pod
// it shares a key with and differs from, and drops any further such item;
// a claim equal to the pod's item leaves the pod's in place.
func (m *merger[T]) replaceClaimed(cs *claims[T]) {
	// base stays nil, and the pod's slice in use, until a pod item is
	// replaced or dropped.
	var base []T
	var placedBy map[int]int
	for j := range m.base {
		own := &m.base[j]
		replacedBy := -1
		for k, key := range m.l.keys {
			c, ok := cs.byKey[k][key.of(own)]
			if !ok {
				continue
			}
			if apiequality.Semantic.DeepEqual(*cs.list[c].item, *own) {
				// The pod has it already: it stays the pod's.
				cs.list[c].placed = true
				continue
			}
			if replacedBy < 0 {
				replacedBy = c
			}
		}
		if replacedBy < 0 {
			if base != nil {
				base = append(base, *own)
			}
			continue
		}
		if base == nil {
			base = make([]T, j, len(m.base)+m.total)
			copy(base, m.base[:j])
			placedBy = map[int]int{}
		}
		// The first pod item a claim meets gives it its place; any
		// further one goes.
		if c := &cs.list[replacedBy]; !c.placed {
			c.placed = true
			placedBy[len(base)] = c.pi
			n := len(base)
			base = base[:n+1]
			m.l.deepCopyInto(c.item, &base[n])
		}
	}
	if base != nil {
		m.base, m.merged, m.placedBy, m.own = base, base, placedBy, true
	}
}

// appendedBy returns the tags of the appended items.
func (m *merger[T]) appendedBy() []int32 {
	if m.total <= linearSearchMax {
		return m.tagBuf[:m.ntags]
	}
	return m.tags
}

// sortAppended puts the appended items in preset order: each phase
// appends its presets' items in order, so only interleaving phases can
// break it. A counting sort on the preset index keeps it linear and each
// preset's items in their order.
func (m *merger[T]) sortAppended() {
	tags := m.appendedBy()
	if len(m.presets) == 1 || slices.IsSorted(tags) {
		return
	}
	starts := make([]int, len(m.presets)+1)
	for _, t := range tags {
		starts[t+1]++
	}
	for i := 1; i < len(starts); i++ {
		starts[i] += starts[i-1]
	}
	appended := m.merged[len(m.base):]
	sorted := make([]T, len(appended))
	for i, t := range tags {
		sorted[starts[t]] = appended[i]
		starts[t]++
	}
	copy(appended, sorted)
}

// linearSearchMax is the longest merged list searched item by item: below
// it maps cost more than they save. Tests reach both sides through the size
// of their lists.
const linearSearchMax = 16

func addIfAbsent(m map[itemKey]int, k itemKey, pos int) {
	if _, ok := m[k]; !ok {
		m[k] = pos
	}
}

func countItems[T any](presets []*preset, l list[T]) int {
	n := 0
	for _, p := range presets {
		n += len(l.items(&p.spec))
	}
	return n
}

// owner is the pod or container a merged list belongs to, named only when a
// conflict is reported.
type owner struct {
	kind, name string
}

func (o owner) String() string {
	if o.name == "" {
		return o.kind
	}
	return fmt.Sprintf("%s %q", o.kind, o.name)
}

var envKey = listKey[corev1.EnvVar]{
	of:       func(e *corev1.EnvVar) itemKey { return itemKey{a: e.Name} },
	describe: func(e *corev1.EnvVar) string { return fmt.Sprintf("env %q", e.Name) },
}

// envFromKey identifies an envFrom source by everything but optional, so
// that the same source is not added twice and two presets that disagree
// on whether it is optional conflict.
var envFromKey = listKey[corev1.EnvFromSource]{
	of: func(e *corev1.EnvFromSource) itemKey {
		return itemKey{a: e.Prefix, b: configMapName(e), c: secretName(e)}
	},
	describe: func(e *corev1.EnvFromSource) string {
		source := "envFrom"
		if e.ConfigMapRef != nil {
			source += fmt.Sprintf(" configMapRef %q", e.ConfigMapRef.Name)
		}
		if e.SecretRef != nil {
			source += fmt.Sprintf(" secretRef %q", e.SecretRef.Name)
		}
		if e.Prefix != "" {
			source += fmt.Sprintf(" with prefix %q", e.Prefix)
		}
		return source
	},
}

func configMapName(e *corev1.EnvFromSource) string {
	if e.ConfigMapRef == nil {
		return ""
	}
	return e.ConfigMapRef.Name
}

func secretName(e *corev1.EnvFromSource) string {
	if e.SecretRef == nil {
		return ""
	}
	return e.SecretRef.Name
}

var volumeKey = listKey[corev1.Volume]{
	of:       func(v *corev1.Volume) itemKey { return itemKey{a: v.Name} },
	describe: func(v *corev1.Volume) string { return fmt.Sprintf("volume %q", v.Name) },
}

// A mount is identified both by the volume it mounts and by where.
var (
	mountNameKey = listKey[corev1.VolumeMount]{
		of:       func(m *corev1.VolumeMount) itemKey { return itemKey{a: m.Name} },
		describe: func(m *corev1.VolumeMount) string { return fmt.Sprintf("volumeMount %q", m.Name) },
	}
	mountPathKey = listKey[corev1.VolumeMount]{
		of:       func(m *corev1.VolumeMount) itemKey { return itemKey{a: m.MountPath} },
		describe: func(m *corev1.VolumeMount) string { return fmt.Sprintf("volumeMount at %q", m.MountPath) },
	}
)

var (
	envList = list[corev1.EnvVar]{
		items:        func(s *settingsv1alpha1.PodPresetSpec) []corev1.EnvVar { return s.Env },
		keys:         []listKey[corev1.EnvVar]{envKey},
		deepCopyInto: (*corev1.EnvVar).DeepCopyInto,
	}
	envFromList = list[corev1.EnvFromSource]{
		items:        func(s *settingsv1alpha1.PodPresetSpec) []corev1.EnvFromSource { return s.EnvFrom },
		keys:         []listKey[corev1.EnvFromSource]{envFromKey},
		deepCopyInto: (*corev1.EnvFromSource).DeepCopyInto,
	}
	volumeList = list[corev1.Volume]{
		items:        func(s *settingsv1alpha1.PodPresetSpec) []corev1.Volume { return s.Volumes },
		keys:         []listKey[corev1.Volume]{volumeKey},
		deepCopyInto: (*corev1.Volume).DeepCopyInto,
	}
	mountList = list[corev1.VolumeMount]{
		items:        func(s *settingsv1alpha1.PodPresetSpec) []corev1.VolumeMount { return s.VolumeMounts },
		keys:         []listKey[corev1.VolumeMount]{mountNameKey, mountPathKey},
		deepCopyInto: (*corev1.VolumeMount).DeepCopyInto,
	}
)

// containerLists is what the presets give one container.
type containerLists struct {
	env     []corev1.EnvVar
	envFrom []corev1.EnvFromSource
	mounts  []corev1.VolumeMount
}

func mergeContainer(o owner, c *corev1.Container, presets []*preset) (containerLists, []conflict) {
	env, conflicts := mergeList(o, c.Env, presets, envList)
	envFrom, envFromConflicts := mergeList(o, c.EnvFrom, presets, envFromList)
	mounts, mountConflicts := mergeList(o, c.VolumeMounts, presets, mountList)
	return containerLists{env: env, envFrom: envFrom, mounts: mounts}, append(append(conflicts, envFromConflicts...), mountConflicts...)
}

// picking returns the presets that pick a container, presets itself when
// they all do.
func picking(presets []*preset, name string, picker func(*preset) *containerPicker) []*preset {
	return keeping(presets, func(p *preset) bool { return picker(p).picks(name) })
}

// keeping returns the presets keep accepts, presets itself (no copy) when
// it accepts them all, as it does for most pods.
func keeping(presets []*preset, keep func(*preset) bool) []*preset {
	for i, p := range presets {
		if keep(p) {
			continue
		}
		out := append([]*preset(nil), presets[:i]...)
		for _, p := range presets[i+1:] {
			if keep(p) {
				out = append(out, p)
			}
		}
		return out
	}
	return presets
}

func containersOf(p *preset) *containerPicker     { return &p.containers }
func initContainersOf(p *preset) *containerPicker { return &p.initContainers }

// refusal is the error of a pod create that a preset's conflict refuses.
type refusal struct{ err error }

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// applyPresets merges every preset into the pod, with the policies of
// mergeList settling conflicts. When a conflict remains the pod is not
// changed at all: the error is a *refusal when a Reject preset takes part
// in one, and lists only those conflicts; otherwise it lists them all.
// Every container and init container a preset picks gets its env, envFrom
// and mounts; ephemeral containers never do, since they are added later
// through their own subresource. Volumes go into the pod whichever
// containers a preset picks.
func applyPresets(pod *corev1.Pod, presets []*preset) error {
	volumes, conflicts := mergeList(owner{kind: "the pod"}, pod.Spec.Volumes, presets, volumeList)
	initLists := make([]containerLists, len(pod.Spec.InitContainers))
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		lists, containerConflicts := mergeContainer(owner{kind: "init container", name: c.Name}, c, picking(presets, c.Name, initContainersOf))
		initLists[i] = lists
		conflicts = append(conflicts, containerConflicts...)
	}
	lists := make([]containerLists, len(pod.Spec.Containers))
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		containerLists, containerConflicts := mergeContainer(owner{kind: "container", name: c.Name}, c, picking(presets, c.Name, containersOf))
		lists[i] = containerLists
		conflicts = append(conflicts, containerConflicts...)
	}
	if len(conflicts) > 0 {
		var all, rejecting []error
		for _, c := range conflicts {
			all = append(all, c.err)
			if c.reject {
				rejecting = append(rejecting, c.err)
			}
		}
		if len(rejecting) > 0 {
			return &refusal{err: utilerrors.NewAggregate(rejecting)}
		}
		return utilerrors.NewAggregate(all)
	}

	pod.Spec.Volumes = volumes
	for i := range initLists {
		initLists[i].assign(&pod.Spec.InitContainers[i])
	}
	for i := range lists {
		lists[i].assign(&pod.Spec.Containers[i])
	}
	if pod.Annotations == nil {
		pod.Annotations = make(map[string]string, len(presets))
	}
	for _, p := range presets {
		pod.Annotations[p.annotation] = p.resourceVersion
	}
	return nil
}

func (l containerLists) assign(c *corev1.Container) {
	c.Env, c.EnvFrom, c.VolumeMounts = l.env, l.envFrom, l.mounts
}
