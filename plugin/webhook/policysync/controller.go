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

package policysync

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	admissionregistrationv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	settingsv1alpha1 "github.com/admitkit/admitkit/apis/settings/v1alpha1"
	settingsclient "github.com/admitkit/admitkit/generated/clientset/versioned"
	settingsinformers "github.com/admitkit/admitkit/generated/informers/externalversions"
	settingslisters "github.com/admitkit/admitkit/generated/listers/settings/v1alpha1"
	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/internal/events"
	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/mutation"
)

// DefaultDebounce is how long the controller waits after a change before
// it compiles: a kubectl apply of many presets is one pass, not one per
// object.
const DefaultDebounce = time.Second

// Options are what a Controller is built from.
type Options struct {
	// Kube writes the policies and bindings, and the Events.
	Kube kubernetes.Interface
	// Settings and Dynamic read the presets and mutators, all of them
	// (not the plugins' filtered view), and write their annotations.
	Settings settingsclient.Interface
	Dynamic  dynamic.Interface
	// Policies is NewPolicyInformers' factory, which Carried shares; the
	// caller starts it.
	Policies informers.SharedInformerFactory
	// Compile is compiler.Compile.
	Compile func(compiler.Sources) compiler.Result
	// Debounce is DefaultDebounce when zero.
	Debounce time.Duration
}

// Controller keeps the compiled policies in step with the sources.
type Controller struct {
	kube     kubernetes.Interface
	settings settingsclient.Interface
	dynamic  dynamic.Interface
	compile  func(compiler.Sources) compiler.Result
	debounce time.Duration

	settingsFactory settingsinformers.SharedInformerFactory
	podPresets      settingslisters.PodPresetLister
	clusterPresets  settingslisters.ClusterPodPresetLister
	mutators        []mutatorInformer
	policies        []cache.SharedIndexInformer
	synced          []cache.InformerSynced

	queue    workqueue.TypedRateLimitingInterface[string]
	recorder record.EventRecorder
}

type mutatorInformer struct {
	kind     mutation.Kind
	informer cache.SharedIndexInformer
}

// syncKey is the queue's only key: every change recompiles the whole set,
// since what compiles (and in which policy) depends on the others.
const syncKey = "policies"

// New builds the controller; Run starts it.
func New(opts Options) (*Controller, error) {
	switch {
	case opts.Kube == nil || opts.Settings == nil || opts.Dynamic == nil:
		return nil, errors.New("policysync: Options lacks the kube, settings.k8s.io or dynamic client")
	case opts.Policies == nil:
		return nil, errors.New("policysync: Options.Policies is nil")
	case opts.Compile == nil:
		return nil, errors.New("policysync: Options.Compile is nil")
	}
	registerMetrics()
	c := &Controller{
		kube: opts.Kube, settings: opts.Settings, dynamic: opts.Dynamic, compile: opts.Compile,
		debounce:        cmpOr(opts.Debounce, DefaultDebounce),
		settingsFactory: settingsinformers.NewSharedInformerFactory(opts.Settings, policyResync),
		policies:        policyInformers(opts.Policies),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "admitkit_policysync"}),
	}
	presets := c.settingsFactory.Settings().V1alpha1()
	c.podPresets = presets.PodPresets().Lister()
	c.clusterPresets = presets.ClusterPodPresets().Lister()
	informers := []cache.SharedIndexInformer{presets.PodPresets().Informer(), presets.ClusterPodPresets().Informer()}
	for _, k := range mutation.Kinds {
		inf := cache.NewSharedIndexInformer(mutatorListWatch(opts.Dynamic.Resource(k.GVR())), &unstructured.Unstructured{}, policyResync, cache.Indexers{})
		c.mutators = append(c.mutators, mutatorInformer{kind: k, informer: inf})
		informers = append(informers, inf)
	}
	informers = append(informers, c.policies...)
	for _, inf := range informers {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { c.enqueue() },
			UpdateFunc: func(any, any) { c.enqueue() },
			DeleteFunc: func(any) { c.enqueue() },
		}); err != nil {
			return nil, err
		}
		c.synced = append(c.synced, inf.HasSynced)
	}
	return c, nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (c *Controller) enqueue() { c.queue.AddAfter(syncKey, c.debounce) }

// Run compiles and applies until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	defer c.queue.ShutDown()
	c.start(ctx.Done())
	if !cache.WaitForNamedCacheSync("admitkit-policysync", ctx.Done(), c.synced...) {
		return
	}
	klog.InfoS("Compiling presets and mutators into admission policies")
	c.queue.Add(syncKey)
	go func() {
		for c.processNext(ctx) {
		}
	}()
	<-ctx.Done()
}

// start starts the Event recorder and the sources' informers; the
// policies' factory is the caller's to start.
func (c *Controller) start(stop <-chan struct{}) {
	c.recorder = events.NewRecorder(c.kube, "admitkit-policysync", stop)
	c.settingsFactory.Start(stop)
	for _, m := range c.mutators {
		go m.informer.Run(stop)
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.Sync(ctx); err != nil {
		syncsTotal.WithLabelValues("error").Inc()
		klog.ErrorS(err, "Compiled admission policies not in step; retrying")
		c.queue.AddRateLimited(key)
		return true
	}
	syncsTotal.WithLabelValues("success").Inc()
	c.queue.Forget(key)
	return true
}

// source is one preset or mutator as the controller read it.
type source struct {
	id  compiler.Source
	obj metav1.Object
	// patch writes a merge patch of its metadata.
	patch func(ctx context.Context, data []byte) (metav1.Object, error)
	// decodeErrs: a mutator its decoder refused, which never reaches the
	// compiler (the LocationMutator refuses it too).
	decodeErrs field.ErrorList
}

// Sync compiles every source once and brings the cluster in step: the
// sources' annotations, then the policies and bindings, then the removal
// of the mode's objects the set no longer has. It writes nothing when
// everything is already in step.
func (c *Controller) Sync(ctx context.Context) error {
	sources, src, err := c.read()
	if err != nil {
		return err
	}
	res := c.compile(src)
	wrote, annotateErr := c.annotate(ctx, sources, res)
	compiledSources.Set(float64(len(res.Compiled)))
	refusedSources.Set(float64(len(sources) - len(res.Compiled)))
	if wrote {
		// A source's annotation changed its resourceVersion, which a
		// compiled preset records on the pods it changes: the watch event
		// of the write brings the next pass, which compiles the sources as
		// they are now. Applying this pass's policies would only write
		// them twice. The next pass writes no annotation (they are in step),
		// so this ends.
		return annotateErr
	}
	return errors.Join(annotateErr, c.apply(ctx, sources, res))
}

// read lists every source and decodes the mutators.
func (c *Controller) read() (map[compiler.Source]*source, compiler.Sources, error) {
	sources := map[compiler.Source]*source{}
	var src compiler.Sources
	podPresets, err := c.podPresets.List(labels.Everything())
	if err != nil {
		return nil, src, err
	}
	slices.SortFunc(podPresets, func(a, b *settingsv1alpha1.PodPreset) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for _, p := range podPresets {
		src.PodPresets = append(src.PodPresets, *p.DeepCopy())
		ns, name := p.Namespace, p.Name
		sources[compiler.Source{Kind: podPresetKind, Namespace: ns, Name: name}] = &source{obj: p, patch: func(ctx context.Context, data []byte) (metav1.Object, error) {
			return c.settings.SettingsV1alpha1().PodPresets(ns).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: FieldManager})
		}}
	}
	clusterPresets, err := c.clusterPresets.List(labels.Everything())
	if err != nil {
		return nil, src, err
	}
	slices.SortFunc(clusterPresets, func(a, b *settingsv1alpha1.ClusterPodPreset) int { return strings.Compare(a.Name, b.Name) })
	for _, p := range clusterPresets {
		src.ClusterPodPresets = append(src.ClusterPodPresets, *p.DeepCopy())
		name := p.Name
		sources[compiler.Source{Kind: clusterPodPresetKind, Name: name}] = &source{obj: p, patch: func(ctx context.Context, data []byte) (metav1.Object, error) {
			return c.settings.SettingsV1alpha1().ClusterPodPresets().Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: FieldManager})
		}}
	}
	for _, m := range c.mutators {
		objs := m.informer.GetStore().List()
		slices.SortFunc(objs, func(a, b any) int {
			return strings.Compare(a.(*unstructured.Unstructured).GetName(), b.(*unstructured.Unstructured).GetName())
		})
		resource := c.dynamic.Resource(m.kind.GVR())
		for _, obj := range objs {
			u := obj.(*unstructured.Unstructured)
			name := u.GetName()
			s := &source{obj: u, patch: func(ctx context.Context, data []byte) (metav1.Object, error) {
				return resource.Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: FieldManager})
			}}
			sources[compiler.Source{Kind: m.kind.Name, Name: name}] = s
			data, err := json.Marshal(u.Object)
			if err != nil {
				s.decodeErrs = field.ErrorList{field.InternalError(nil, err)}
				continue
			}
			decoded, errs := mutation.DecodeJSON(data)
			if len(errs) > 0 {
				s.decodeErrs = errs
				continue
			}
			src.Mutators = append(src.Mutators, decoded)
		}
	}
	for id, s := range sources {
		s.id = id
	}
	return sources, src, nil
}

// annotate writes each source's CompiledAnnotation and
// NotCompiledAnnotation where they changed, with an Event saying so. It
// reports whether a write changed a source.
func (c *Controller) annotate(ctx context.Context, sources map[compiler.Source]*source, res compiler.Result) (bool, error) {
	reasons := map[compiler.Source]field.ErrorList{}
	for _, r := range res.Refused {
		reasons[r.Source] = append(reasons[r.Source], r.Errs...)
	}
	compiled := map[compiler.Source]bool{}
	for _, s := range res.Compiled {
		compiled[s] = true
	}
	var (
		wrote bool
		errs  []error
	)
	for _, id := range sortedSources(sources) {
		s := sources[id]
		want, reason := "false", ""
		switch {
		case len(s.decodeErrs) > 0:
			reason = s.decodeErrs.ToAggregate().Error()
		case compiled[id] && len(reasons[id]) == 0:
			want = "true"
		case len(reasons[id]) > 0:
			reason = reasons[id].ToAggregate().Error()
		default:
			reason = "the compiler neither compiled nor refused it"
		}
		if len(reason) > maxReasonLength {
			reason = reason[:maxReasonLength-3] + "..."
		}
		have := s.obj.GetAnnotations()
		if have[CompiledAnnotation] == want && have[NotCompiledAnnotation] == reason {
			continue
		}
		annotations := map[string]any{CompiledAnnotation: want, NotCompiledAnnotation: nil}
		if reason != "" {
			annotations[NotCompiledAnnotation] = reason
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		after, err := s.patch(ctx, patch)
		if apierrors.IsNotFound(err) {
			continue // deleted since: its delete event brings the next pass
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("annotating %s: %w", id, err))
			continue
		}
		if after.GetResourceVersion() == s.obj.GetResourceVersion() {
			continue // another replica wrote the same a moment before
		}
		wrote = true
		ref := reference(id, after)
		if want == "true" {
			c.recorder.Event(ref, corev1.EventTypeNormal, "Compiled", "Compiled into admission policies: kube-apiserver applies it, the webhook leaves it")
		} else {
			c.recorder.Eventf(ref, corev1.EventTypeWarning, "NotCompiled", "Not compiled, the webhook applies it: %s", reason)
		}
	}
	return wrote, errors.Join(errs...)
}

func sortedSources(sources map[compiler.Source]*source) []compiler.Source {
	ids := make([]compiler.Source, 0, len(sources))
	for id := range sources {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b compiler.Source) int { return strings.Compare(a.String(), b.String()) })
	return ids
}

// reference is what an Event on a source regards.
func reference(id compiler.Source, obj metav1.Object) *corev1.ObjectReference {
	ref := &corev1.ObjectReference{Kind: id.Kind, Namespace: id.Namespace, Name: id.Name, UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion()}
	switch id.Kind {
	case podPresetKind, clusterPodPresetKind:
		ref.APIVersion = settingsv1alpha1.SchemeGroupVersion.String()
	default:
		for _, k := range mutation.Kinds {
			if k.Name == id.Kind {
				ref.APIVersion = k.GVR().GroupVersion().String()
			}
		}
	}
	return ref
}

// desiredObject is one policy or binding to apply, with its kind's table.
type desiredObject struct {
	obj  runtime.Object
	meta metav1.Object
	kind *kindOps
}

// apply server-side-applies the set's policies and bindings that are not
// already as wanted, then deletes the mode's objects the set no longer
// has, bindings first.
func (c *Controller) apply(ctx context.Context, sources map[compiler.Source]*source, res compiler.Result) error {
	carried := map[compiler.Source]string{}
	for _, id := range res.Compiled {
		if s, ok := sources[id]; ok {
			carried[id] = s.obj.GetResourceVersion()
		}
	}
	objs := res.Objects()
	desired := make([]desiredObject, 0, len(objs))
	setHash := sha256.New()
	for _, obj := range objs {
		m, ok := obj.(metav1.Object)
		if !ok {
			return fmt.Errorf("the compiler made a %T, which has no metadata", obj)
		}
		k := opsFor(obj)
		if k == nil {
			return fmt.Errorf("the compiler made a %T, which the mode does not apply", obj)
		}
		data, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		objHash := hex.EncodeToString(sum[:8])
		setHash.Write([]byte(k.kind + "/" + m.GetName() + "=" + objHash + "\n"))
		m.SetAnnotations(mergeMaps(m.GetAnnotations(), map[string]string{HashAnnotation: objHash}))
		desired = append(desired, desiredObject{obj: obj, meta: m, kind: k})
	}
	sourceList := formatSources(carried)
	setHash.Write([]byte(sourceList))
	hash := hex.EncodeToString(setHash.Sum(nil)[:8])
	wanted := map[string]bool{}
	var errs []error
	applied := 0
	for _, d := range desired {
		d.meta.SetLabels(mergeMaps(d.meta.GetLabels(), map[string]string{SetLabel: hash, ManagedByLabel: "admitkit"}))
		d.meta.SetAnnotations(mergeMaps(d.meta.GetAnnotations(), map[string]string{
			ObjectsAnnotation: strconv.Itoa(len(desired)),
			SourcesAnnotation: sourceList,
		}))
		wanted[d.kind.kind+"/"+d.meta.GetName()] = true
		if have, ok := c.observed(d.kind, d.meta.GetName()); ok &&
			have.GetLabels()[SetLabel] == hash && have.GetAnnotations()[HashAnnotation] == d.meta.GetAnnotations()[HashAnnotation] {
			continue
		}
		if err := d.kind.apply(ctx, c.kube, d.obj); err != nil {
			errs = append(errs, fmt.Errorf("applying %s %s: %w", d.kind.kind, d.meta.GetName(), err))
			continue
		}
		applied++
	}
	if len(errs) > 0 {
		// A set partly written is no set: deleting the old one's objects
		// now could only take away more.
		return errors.Join(errs...)
	}
	deleted := 0
	for _, k := range kinds {
		for _, obj := range c.policyInformer(k).GetStore().List() {
			m, ok := obj.(metav1.Object)
			if !ok || m.GetLabels()[SetLabel] == "" || wanted[k.kind+"/"+m.GetName()] {
				continue
			}
			uid := m.GetUID()
			err := k.delete(ctx, c.kube, m.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				errs = append(errs, fmt.Errorf("deleting %s %s: %w", k.kind, m.GetName(), err))
				continue
			}
			deleted++
		}
	}
	compiledObjects.Set(float64(len(desired)))
	if applied > 0 || deleted > 0 {
		klog.InfoS("Compiled admission policies written", "set", hash, "objects", len(desired), "applied", applied, "deleted", deleted, "compiled", len(res.Compiled), "notCompiled", len(sources)-len(res.Compiled))
	}
	return errors.Join(errs...)
}

func (c *Controller) observed(k *kindOps, name string) (metav1.Object, bool) {
	obj, ok, err := c.policyInformer(k).GetStore().GetByKey(name)
	if err != nil || !ok {
		return nil, false
	}
	m, ok := obj.(metav1.Object)
	return m, ok
}

func (c *Controller) policyInformer(k *kindOps) cache.SharedIndexInformer {
	return c.policies[slices.Index(kinds, k)]
}

func mergeMaps(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// kindOps applies and deletes one of the four kinds.
type kindOps struct {
	kind   string
	apply  func(ctx context.Context, client kubernetes.Interface, obj runtime.Object) error
	delete func(ctx context.Context, client kubernetes.Interface, name string, opts metav1.DeleteOptions) error
}

// kinds are in policyInformers' order: bindings first.
var kinds = []*kindOps{
	{
		kind: "MutatingAdmissionPolicyBinding",
		apply: func(ctx context.Context, client kubernetes.Interface, obj runtime.Object) error {
			return applyAs(obj, func(ac *admissionregistrationv1ac.MutatingAdmissionPolicyBindingApplyConfiguration) error {
				_, err := client.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Apply(ctx, ac, applyOptions)
				return err
			})
		},
		delete: func(ctx context.Context, client kubernetes.Interface, name string, opts metav1.DeleteOptions) error {
			return client.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Delete(ctx, name, opts)
		},
	},
	{
		kind: "ValidatingAdmissionPolicyBinding",
		apply: func(ctx context.Context, client kubernetes.Interface, obj runtime.Object) error {
			return applyAs(obj, func(ac *admissionregistrationv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration) error {
				_, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Apply(ctx, ac, applyOptions)
				return err
			})
		},
		delete: func(ctx context.Context, client kubernetes.Interface, name string, opts metav1.DeleteOptions) error {
			return client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, name, opts)
		},
	},
	{
		kind: "MutatingAdmissionPolicy",
		apply: func(ctx context.Context, client kubernetes.Interface, obj runtime.Object) error {
			return applyAs(obj, func(ac *admissionregistrationv1ac.MutatingAdmissionPolicyApplyConfiguration) error {
				_, err := client.AdmissionregistrationV1().MutatingAdmissionPolicies().Apply(ctx, ac, applyOptions)
				return err
			})
		},
		delete: func(ctx context.Context, client kubernetes.Interface, name string, opts metav1.DeleteOptions) error {
			return client.AdmissionregistrationV1().MutatingAdmissionPolicies().Delete(ctx, name, opts)
		},
	},
	{
		kind: "ValidatingAdmissionPolicy",
		apply: func(ctx context.Context, client kubernetes.Interface, obj runtime.Object) error {
			return applyAs(obj, func(ac *admissionregistrationv1ac.ValidatingAdmissionPolicyApplyConfiguration) error {
				// The status is kube-apiserver's (its type checking).
				ac.Status = nil
				_, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Apply(ctx, ac, applyOptions)
				return err
			})
		},
		delete: func(ctx context.Context, client kubernetes.Interface, name string, opts metav1.DeleteOptions) error {
			return client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, name, opts)
		},
	},
}

// applyOptions: one field manager, forced, so that every replica's apply
// of the same set is the same request and a no-op after the first.
var applyOptions = metav1.ApplyOptions{FieldManager: FieldManager, Force: true}

// applyAs turns obj into its apply configuration (the same JSON) and
// applies it.
func applyAs[T any](obj runtime.Object, apply func(*T) error) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	ac := new(T)
	if err := json.Unmarshal(data, ac); err != nil {
		return err
	}
	return apply(ac)
}

// opsFor is obj's kind's table.
func opsFor(obj runtime.Object) *kindOps {
	var kind string
	switch obj.(type) {
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		kind = "MutatingAdmissionPolicy"
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		kind = "MutatingAdmissionPolicyBinding"
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		kind = "ValidatingAdmissionPolicy"
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		kind = "ValidatingAdmissionPolicyBinding"
	}
	for _, k := range kinds {
		if k.kind == kind {
			return k
		}
	}
	return nil
}
