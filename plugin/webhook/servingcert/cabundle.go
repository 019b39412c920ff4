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

package servingcert

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// watchConfigurations returns a channel that receives whenever one of the
// named webhook configurations is created or changed, so that a
// configuration applied after the server started, or re-applied without
// its caBundle, gets the bundle at once rather than at the next interval.
// An informer refuses a handler only once stopped, which a new one is not;
// should it happen, Start fails rather than run without the watch.
func (m *Manager) watchConfigurations(ctx context.Context) (<-chan struct{}, error) {
	changed := make(chan struct{}, 1)
	if m.opts.Client == nil || len(m.opts.MutatingWebhookConfigurations)+len(m.opts.ValidatingWebhookConfigurations) == 0 {
		return changed, nil
	}
	names := map[string]bool{}
	for _, n := range append(append([]string(nil), m.opts.MutatingWebhookConfigurations...), m.opts.ValidatingWebhookConfigurations...) {
		names[n] = true
	}
	notify := func(obj any) {
		if o, ok := obj.(metav1.Object); ok && names[o.GetName()] {
			select {
			case changed <- struct{}{}:
			default: // a sync is pending already
			}
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: notify, UpdateFunc: func(_, obj any) { notify(obj) }}
	factory := informers.NewSharedInformerFactory(m.opts.Client, 0)
	v1 := factory.Admissionregistration().V1()
	if len(m.opts.MutatingWebhookConfigurations) > 0 {
		if _, err := v1.MutatingWebhookConfigurations().Informer().AddEventHandler(handler); err != nil {
			return nil, fmt.Errorf("watching MutatingWebhookConfigurations: %w", err)
		}
	}
	if len(m.opts.ValidatingWebhookConfigurations) > 0 {
		if _, err := v1.ValidatingWebhookConfigurations().Informer().AddEventHandler(handler); err != nil {
			return nil, fmt.Errorf("watching ValidatingWebhookConfigurations: %w", err)
		}
	}
	factory.Start(ctx.Done())
	return changed, nil
}

// writeBundle puts bundle into every webhook of the named configurations
// whose caBundle differs. A configuration that does not exist yet is left
// for the next sync: the manifests may be applied in any order.
func (m *Manager) writeBundle(ctx context.Context, bundle []byte) error {
	if len(bundle) == 0 {
		return nil
	}
	var errs []error
	mutating := m.opts.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	for _, name := range m.opts.MutatingWebhookConfigurations {
		errs = append(errs, retryOnConflict(ctx, func() error {
			cfg, err := mutating.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			changed := false
			for i := range cfg.Webhooks {
				changed = setBundle(&cfg.Webhooks[i].ClientConfig, bundle) || changed
			}
			if !changed {
				return nil
			}
			_, err = mutating.Update(ctx, cfg, metav1.UpdateOptions{})
			return err
		}, "MutatingWebhookConfiguration", name))
	}
	validating := m.opts.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	for _, name := range m.opts.ValidatingWebhookConfigurations {
		errs = append(errs, retryOnConflict(ctx, func() error {
			cfg, err := validating.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			changed := false
			for i := range cfg.Webhooks {
				changed = setBundle(&cfg.Webhooks[i].ClientConfig, bundle) || changed
			}
			if !changed {
				return nil
			}
			_, err = validating.Update(ctx, cfg, metav1.UpdateOptions{})
			return err
		}, "ValidatingWebhookConfiguration", name))
	}
	return errors.Join(errs...)
}

func setBundle(cc *admissionregistrationv1.WebhookClientConfig, bundle []byte) bool {
	if bytes.Equal(cc.CABundle, bundle) {
		return false
	}
	cc.CABundle = bundle
	return true
}

// retryOnConflict runs write until it does not conflict with another
// replica's write, a few times; NotFound is not an error here.
func retryOnConflict(ctx context.Context, write func() error, kind, name string) error {
	for range 5 {
		err := write()
		switch {
		case err == nil:
			return nil
		case apierrors.IsNotFound(err):
			klog.V(2).InfoS("Webhook configuration not there yet; its CA bundle is written once it is", "kind", kind, "name", name)
			return nil
		case !apierrors.IsConflict(err):
			return fmt.Errorf("writing the CA bundle into %s %s: %w", kind, name, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return fmt.Errorf("writing the CA bundle into %s %s: it kept changing meanwhile", kind, name)
}
