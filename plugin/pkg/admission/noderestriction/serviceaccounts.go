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
	"context"
	"errors"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"
)

// audienceVerb is the RBAC verb that lets a node request tokens for an
// audience none of its pods names (the audience is the "resource").
const audienceVerb = "request-serviceaccounts-token-audience"

var tokenRequestGVK = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")

// validateServiceAccount lets a node request service account tokens only
// for pods bound to it, and, with ServiceAccountNodeAudienceRestriction,
// only for audiences those pods use. A token bound to a pod dies with the
// pod; the apiserver adds the node binding from the pod's, so a node cannot
// bind a token to itself directly (kubernetes#121723).
func (p *Plugin) validateServiceAccount(ctx context.Context, nodeName string, a admission.Attributes, o admission.ObjectInterfaces) *denial {
	if a.GetOperation() != admission.Create || a.GetSubresource() != "token" {
		return nil
	}
	tr, err := asVersioned[authenticationv1.TokenRequest](a.GetObject(), tokenRequestGVK, o)
	if err != nil {
		return forbid(reasonUnreadableObject, err)
	}
	ref := tr.Spec.BoundObjectRef
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name == "" {
		return forbid(reasonUnboundToken, fmt.Errorf("node requested token not bound to a pod"))
	}
	if ref.UID == "" {
		return forbid(reasonUnboundToken, fmt.Errorf("node requested token with a pod binding without a uid"))
	}
	pod, err := p.objects.pods.get(ctx, a.GetNamespace(), ref.Name)
	if err != nil {
		return lookupDenial(err)
	}
	if ref.UID != pod.UID {
		return forbid(reasonUIDMismatch, fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	if pod.Spec.NodeName != nodeName {
		return forbid(reasonOtherNodeObject, fmt.Errorf("node requested token bound to a pod scheduled on a different node"))
	}
	if p.gates.audienceRestriction {
		if err := p.validateTokenAudience(ctx, tr.Spec.Audiences, pod, a); err != nil {
			return forbid(reasonTokenAudience, err)
		}
	}
	return nil
}

// validateTokenAudience accepts an audience the pod uses, through a
// projected token or a CSI driver that requests tokens for it, or one the
// authorizer grants the node. No audience means the apiserver's own: the
// token storage fills in the default after admission.
func (p *Plugin) validateTokenAudience(ctx context.Context, audiences []string, pod *corev1.Pod, a admission.Attributes) error {
	var audience string
	switch len(audiences) {
	case 0:
	case 1:
		audience = audiences[0]
	default:
		return fmt.Errorf("node may only request 0 or 1 audiences")
	}

	used, err := p.podUsesAudience(ctx, pod, audience)
	if err != nil {
		return fmt.Errorf("error validating audience %q: %w", audience, err)
	}
	if used {
		return nil
	}

	if p.authz == nil {
		return fmt.Errorf("%s is not authorized to request tokens for audience %q", a.GetUserInfo().GetName(), audience)
	}
	// The request is on the service account, so a.GetName() names it.
	decision, _, err := p.authz.Authorize(ctx, authorizerAttributes(a, audienceVerb, audience, a.GetName()))
	// An authorizer may allow and report an evaluation error at once; the
	// decision wins, as in the apiserver's authorization filter.
	if decision == authorizer.DecisionAllow {
		return nil
	}
	if err != nil {
		return fmt.Errorf("error authorizing %s to request tokens for audience %q: %w", a.GetUserInfo().GetName(), audience, err)
	}
	return fmt.Errorf("%s is not authorized to request tokens for audience %q", a.GetUserInfo().GetName(), audience)
}

// podUsesAudience walks the pod's volumes for one that needs tokens for
// audience. A lookup that fails is remembered but does not stop the walk: a
// later volume may still match, and only when none does are the failures
// reported (the authorizer is then not asked, since the answer may be
// wrong only because of a stale informer or a failed request).
func (p *Plugin) podUsesAudience(ctx context.Context, pod *corev1.Pod, audience string) (bool, error) {
	var errs []error
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.Projected != nil {
			for _, src := range v.Projected.Sources {
				if src.ServiceAccountToken != nil && src.ServiceAccountToken.Audience == audience {
					return true, nil
				}
			}
		}

		var driver string
		var err error
		switch {
		case v.Ephemeral != nil && v.Ephemeral.VolumeClaimTemplate != nil:
			// The ephemeral volume controller names the claim <pod>-<volume>.
			driver, err = p.csiDriverOfClaim(ctx, pod.Namespace, pod.Name+"-"+v.Name)
		case v.PersistentVolumeClaim != nil:
			driver, err = p.csiDriverOfClaim(ctx, pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		case v.CSI != nil:
			driver = v.CSI.Driver
		default:
			driver = inTreeInlineCSIDriver(&v.VolumeSource)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if driver == "" {
			continue
		}
		ok, err := p.csiDriverRequestsAudience(ctx, driver, audience)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return true, nil
		}
	}
	return false, utilerrors.NewAggregate(errs)
}

// csiDriverOfClaim follows claim to volume to CSI driver; "" when the
// volume is neither CSI nor migratable to CSI.
func (p *Plugin) csiDriverOfClaim(ctx context.Context, namespace, claimName string) (string, error) {
	if p.objects.pvcs == nil || p.objects.pvs == nil {
		return "", errors.New("no persistent volume claim or volume lister")
	}
	pvc, err := p.objects.pvcs.get(ctx, namespace, claimName)
	if err != nil {
		return "", err
	}
	pv, err := p.objects.pvs.get(ctx, "", pvc.Spec.VolumeName)
	if err != nil {
		return "", err
	}
	if pv.Spec.CSI != nil {
		return pv.Spec.CSI.Driver, nil
	}
	driver := inTreePersistentCSIDriver(&pv.Spec.PersistentVolumeSource)
	if driver != "" {
		klog.FromContext(ctx).V(5).Info("Treating in-tree volume as its CSI driver for the audience check", "persistentVolume", pv.Name, "driver", driver)
	}
	return driver, nil
}

func (p *Plugin) csiDriverRequestsAudience(ctx context.Context, driverName, audience string) (bool, error) {
	if p.objects.csiDrivers == nil {
		return false, errors.New("no CSI driver lister")
	}
	driver, err := p.objects.csiDrivers.get(ctx, "", driverName)
	if err != nil {
		return false, err
	}
	for _, tr := range driver.Spec.TokenRequests {
		if tr.Audience == audience {
			return true, nil
		}
	}
	return false, nil
}
