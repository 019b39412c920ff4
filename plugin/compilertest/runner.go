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

// Package compilertest runs a compiler.Result's policies on an object
// in-process, with k8s.io/apiserver's own MutatingAdmissionPolicy and
// ValidatingAdmissionPolicy plugins chained as kube-apiserver 1.37 chains
// them (one reinvocation of the mutating plugins, then validation), so that
// tests can check compiled policies without starting a server. Only tests
// import it.
package compilertest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/applyconfigurations"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/admitkit/admitkit/plugin/compiler"
	"github.com/admitkit/admitkit/plugin/webhook/offline/defaults"
)

// Runner admits objects through one compiler.Result's policies and
// bindings. It is safe for concurrent use; Close stops it.
type Runner struct {
	// User is the requester every request names (request.userInfo in CEL);
	// set it before the first Admit.
	User user.Info

	scheme           *runtime.Scheme
	objectInterfaces admission.ObjectInterfaces
	restMapper       meta.RESTMapper
	chain            admission.Interface
	informers        informers.SharedInformerFactory
	stop             chan struct{}
	closeOnce        sync.Once
}

// New starts a Runner holding result's policies and bindings and the given
// namespaces (what namespaceSelector and namespaceObject see; a request in
// a namespace not given fails as kube-apiserver fails it for a namespace
// that does not exist). A policy with an expression that does not compile
// is an error, as kube-apiserver refuses to create it.
func New(result compiler.Result, namespaces ...*corev1.Namespace) (*Runner, error) {
	return start(result, func(plugins *admission.Plugins, scheme *runtime.Scheme) {
		registerMutating(plugins, applyconfigurations.NewTypeConverter(scheme))
	}, func(c *fake.Clientset) kubernetes.Interface { return c }, namespaces)
}

// start is New with the MutatingAdmissionPolicy plugin that register
// registers and the client that the plugins are given: the tests run
// upstream's own mutating.NewPlugin through it, against a client that
// serves OpenAPI schemas, to prove registerMutating equal to it.
func start(result compiler.Result, register func(*admission.Plugins, *runtime.Scheme), client func(*fake.Clientset) kubernetes.Interface, namespaces []*corev1.Namespace) (*Runner, error) {
	if err := checkExpressions(result); err != nil {
		return nil, fmt.Errorf("compilertest: %w", err)
	}
	if err := refuseParams(result); err != nil {
		return nil, err
	}
	// The scheme that defaults as kube-apiserver 1.37 does. It defaults
	// the policies and bindings as kube-apiserver stores them, and the
	// dispatcher defaults the object after every mutation, as there.
	scheme := defaults.NewScheme()

	var objects []runtime.Object
	for i := range result.MutatingPolicies {
		objects = append(objects, result.MutatingPolicies[i].DeepCopy())
	}
	for i := range result.MutatingBindings {
		objects = append(objects, result.MutatingBindings[i].DeepCopy())
	}
	for i := range result.ValidatingPolicies {
		objects = append(objects, result.ValidatingPolicies[i].DeepCopy())
	}
	for i := range result.ValidatingBindings {
		objects = append(objects, result.ValidatingBindings[i].DeepCopy())
	}
	for _, ns := range namespaces {
		objects = append(objects, ns.DeepCopy())
	}
	for _, obj := range objects {
		scheme.Default(obj)
	}

	fakeClient := fake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(fakeClient, 0)
	restMapper := testrestmapper.TestOnlyStaticRESTMapper(scheme)
	stop := make(chan struct{})
	r := &Runner{
		User:             &user.DefaultInfo{Name: "compilertest", Groups: []string{user.AllAuthenticated}},
		scheme:           scheme,
		objectInterfaces: admission.NewObjectInterfacesFromScheme(scheme),
		restMapper:       restMapper,
		informers:        factory,
		stop:             stop,
	}

	// The plugins wait for their informers in steps of 100 ms; started and
	// synced here first, the informers are ready when the plugins first
	// look, which saves each Runner that wait.
	informersUsed := []cache.SharedIndexInformer{
		factory.Core().V1().Namespaces().Informer(),
		factory.Admissionregistration().V1().MutatingAdmissionPolicies().Informer(),
		factory.Admissionregistration().V1().MutatingAdmissionPolicyBindings().Informer(),
		factory.Admissionregistration().V1().ValidatingAdmissionPolicies().Informer(),
		factory.Admissionregistration().V1().ValidatingAdmissionPolicyBindings().Informer(),
	}
	factory.Start(stop)
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		for _, informer := range informersUsed {
			if !informer.HasSynced() {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		r.Close()
		return nil, fmt.Errorf("compilertest: the informers of policies, bindings and namespaces did not sync: %w", err)
	}

	plugins := admission.NewPlugins()
	register(plugins, scheme)
	validating.Register(plugins)
	pluginInitializer := initializer.New(
		client(fakeClient),
		dynamicfake.NewSimpleDynamicClient(scheme),
		factory,
		// Authorization is not what the compiled policies decide on.
		authorizerfactory.NewAlwaysAllowAuthorizer(),
		// The gates at this apiserver version's defaults: MutatingAdmissionPolicy is GA and on.
		utilfeature.DefaultFeatureGate,
		compatibility.DefaultBuildEffectiveVersion(),
		stop,
		restMapper,
	)
	// NewFromPlugins is how kube-apiserver builds its chain: it initializes
	// and validates each plugin and wraps the chain in the reinvoker.
	chain, err := plugins.NewFromPlugins([]string{mutating.PluginName, validating.PluginName}, noConfig{}, pluginInitializer, nil)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("compilertest: admission chain: %w", err)
	}
	r.chain = chain
	return r, nil
}

// refuseParams refuses policies with a paramKind: a Runner holds no
// parameter objects, so their bindings could only fail or be skipped, and
// the compiler writes none.
func refuseParams(result compiler.Result) error {
	var errs []error
	for _, p := range result.MutatingPolicies {
		if p.Spec.ParamKind != nil {
			errs = append(errs, fmt.Errorf("compilertest: MutatingAdmissionPolicy %s: spec.paramKind: parameters are not supported", p.Name))
		}
	}
	for _, p := range result.ValidatingPolicies {
		if p.Spec.ParamKind != nil {
			errs = append(errs, fmt.Errorf("compilertest: ValidatingAdmissionPolicy %s: spec.paramKind: parameters are not supported", p.Name))
		}
	}
	return errors.Join(errs...)
}

// Close stops the Runner's informers and plugins.
func (r *Runner) Close() {
	r.closeOnce.Do(func() {
		close(r.stop)
		r.informers.Shutdown()
	})
}

// Admit runs a create or an update of obj (a typed object of a built-in
// kind, or the same unstructured) in namespace ("" for a cluster-scoped
// kind) through the mutating policies, with kube-apiserver's one
// reinvocation, then through the validating policies. It returns the
// object as stored (of obj's form), the warnings of Warn actions, the audit
// annotations (Audit actions and auditAnnotations), or the refusal.
// obj is not changed. As kube-apiserver decodes a request body, obj is
// defaulted before admission; an empty metadata.namespace takes namespace.
// An update's old object is obj itself (an update that changes nothing);
// AdmitUpdate names another. The old object is defaulted too, as
// kube-apiserver stored it.
func (r *Runner) Admit(ctx context.Context, obj runtime.Object, operation admission.Operation, namespace string) (runtime.Object, []string, map[string]string, error) {
	var old runtime.Object
	if operation == admission.Update {
		old = obj
	}
	return r.admit(ctx, obj, old, operation, namespace)
}

// AdmitUpdate is Admit of an update from old to obj.
func (r *Runner) AdmitUpdate(ctx context.Context, obj, old runtime.Object, namespace string) (runtime.Object, []string, map[string]string, error) {
	return r.admit(ctx, obj, old, admission.Update, namespace)
}

func (r *Runner) admit(ctx context.Context, obj, old runtime.Object, operation admission.Operation, namespace string) (out runtime.Object, warnings []string, annotations map[string]string, err error) {
	// kube-apiserver answers a request whose admission panics with an
	// internal error; so does Admit, rather than end the test binary.
	defer func() {
		if p := recover(); p != nil {
			out, warnings, annotations = nil, nil, nil
			err = apierrors.NewInternalError(fmt.Errorf("compilertest: admission panicked: %v\n%s", p, debug.Stack()))
		}
	}()
	var options runtime.Object
	switch operation {
	case admission.Create:
		options = &metav1.CreateOptions{}
	case admission.Update:
		options = &metav1.UpdateOptions{}
	default:
		return nil, nil, nil, fmt.Errorf("compilertest: operation %s: only CREATE and UPDATE are admitted", operation)
	}
	in, gvk, wasUnstructured, err := r.typed(obj)
	if err != nil {
		return nil, nil, nil, err
	}
	var oldIn runtime.Object
	if old != nil {
		if oldIn, _, _, err = r.typed(old); err != nil {
			return nil, nil, nil, err
		}
		r.scheme.Default(oldIn)
	}
	mapping, err := r.restMapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("compilertest: %v: %w", gvk, err)
	}
	accessor, err := meta.Accessor(in)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("compilertest: %v: %w", gvk, err)
	}
	// kube-apiserver's create and update handlers make the object's
	// namespace the request's before admission, and refuse a different one.
	if mapping.Scope.Name() == meta.RESTScopeNameRoot {
		if namespace != "" {
			return nil, nil, nil, fmt.Errorf("compilertest: %v %s is cluster-scoped, but namespace %q was given", gvk.Kind, accessor.GetName(), namespace)
		}
	} else {
		if namespace == "" {
			return nil, nil, nil, fmt.Errorf("compilertest: %v %s is namespaced: give its namespace", gvk.Kind, accessor.GetName())
		}
		if accessor.GetNamespace() == "" {
			accessor.SetNamespace(namespace)
		} else if accessor.GetNamespace() != namespace {
			return nil, nil, nil, fmt.Errorf("compilertest: %v %s: metadata.namespace %q does not match the request's namespace %q", gvk.Kind, accessor.GetName(), accessor.GetNamespace(), namespace)
		}
	}
	r.scheme.Default(in)
	if oldAccessor, err := meta.Accessor(oldIn); err == nil && oldAccessor.GetNamespace() == "" {
		oldAccessor.SetNamespace(accessor.GetNamespace())
	}

	attrs := &recordingAttributes{Attributes: admission.NewAttributesRecord(in, oldIn, gvk, namespace, accessor.GetName(),
		mapping.Resource, "", operation, options, false, r.User)}
	recorder := &warningRecorder{}
	ctx = warning.WithWarningRecorder(ctx, recorder)

	if mutator, ok := r.chain.(admission.MutationInterface); ok && mutator.Handles(operation) {
		if err := mutator.Admit(ctx, attrs, r.objectInterfaces); err != nil {
			return nil, recorder.texts(), attrs.annotations(), err
		}
	}
	if validator, ok := r.chain.(admission.ValidationInterface); ok && validator.Handles(operation) {
		if err := validator.Validate(ctx, attrs, r.objectInterfaces); err != nil {
			return nil, recorder.texts(), attrs.annotations(), err
		}
	}

	out = attrs.GetObject()
	if wasUnstructured {
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(out)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("compilertest: %v %s: %w", gvk, accessor.GetName(), err)
		}
		u := &unstructured.Unstructured{Object: content}
		u.SetGroupVersionKind(gvk)
		out = u
	}
	return out, recorder.texts(), attrs.annotations(), nil
}

// typed returns a copy of obj as the typed object kube-apiserver's
// admission sees for a built-in kind (it never sees one unstructured), its
// kind, and whether obj was unstructured. An unknown field is an error
// (kube-apiserver would drop it with a warning): a test should not pass on
// a field that never reached the policies.
func (r *Runner) typed(obj runtime.Object) (runtime.Object, schema.GroupVersionKind, bool, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		gvk := u.GroupVersionKind()
		typed, err := r.scheme.New(gvk)
		if err != nil {
			return nil, gvk, true, fmt.Errorf("compilertest: %v %s: only built-in kinds are admitted: %w", gvk, u.GetName(), err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.UnstructuredContent(), typed, true); err != nil {
			return nil, gvk, true, fmt.Errorf("compilertest: %v %s: %w", gvk, u.GetName(), err)
		}
		typed.GetObjectKind().SetGroupVersionKind(gvk)
		return typed, gvk, true, nil
	}
	gvks, _, err := r.scheme.ObjectKinds(obj)
	if err != nil {
		return nil, schema.GroupVersionKind{}, false, fmt.Errorf("compilertest: %T: %w", obj, err)
	}
	typed := obj.DeepCopyObject()
	typed.GetObjectKind().SetGroupVersionKind(gvks[0])
	return typed, gvks[0], false, nil
}

// recordingAttributes keeps the audit annotations the plugins add, which
// kube-apiserver writes into the request's audit event.
type recordingAttributes struct {
	admission.Attributes

	mu    sync.Mutex
	added map[string]string
}

func (a *recordingAttributes) AddAnnotation(key, value string) error {
	return a.AddAnnotationWithLevel(key, value, auditinternal.LevelMetadata)
}

func (a *recordingAttributes) AddAnnotationWithLevel(key, value string, level auditinternal.Level) error {
	if err := a.Attributes.AddAnnotationWithLevel(key, value, level); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.added == nil {
		a.added = map[string]string{}
	}
	a.added[key] = value
	return nil
}

func (a *recordingAttributes) annotations() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]string, len(a.added))
	for k, v := range a.added {
		out[k] = v
	}
	return out
}

// warningRecorder keeps the warnings kube-apiserver would send back in
// Warning headers.
type warningRecorder struct {
	mu   sync.Mutex
	list []string
}

func (w *warningRecorder) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warningRecorder) texts() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.list...)
}

// noConfig gives every plugin no configuration file, as kube-apiserver
// does without an AdmissionConfiguration.
type noConfig struct{}

func (noConfig) ConfigFor(string) (io.Reader, error) { return nil, nil }
