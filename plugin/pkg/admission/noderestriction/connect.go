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
	"fmt"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/admission"
)

// validatePodConnect holds a CONNECT to a pod (exec, attach, portforward,
// proxy), each of which runs code in the pod or reaches into it, to pods
// whose stored spec.nodeName is nodeName. The pod is looked up, as for
// deletes and evictions: a CONNECT carries only options, and the pod's
// binding, once set, never changes.
func (p *Plugin) validatePodConnect(ctx context.Context, nodeName string, a admission.Attributes) *denial {
	podName, err := connectTarget(a)
	if err != nil {
		return forbid(reasonUnreadableObject, err)
	}
	pod, err := p.objects.pods.get(ctx, a.GetNamespace(), podName)
	if err != nil {
		return lookupDenial(err)
	}
	if pod.Spec.NodeName != nodeName {
		return forbid(reasonOtherNodeObject, fmt.Errorf("can only use pods/%s on pods with spec.nodeName set to its node, not %q", a.GetSubresource(), pod.Spec.NodeName))
	}
	return nil
}

// validateNodeConnect holds nodes/proxy, the kubelet's whole API (which
// runs code in any pod of its node), to the requester's own node.
func validateNodeConnect(nodeName string, a admission.Attributes) *denial {
	target, err := connectTarget(a)
	if err != nil {
		return forbid(reasonUnreadableObject, err)
	}
	if target != nodeName {
		return forbid(reasonOtherNodeObject, fmt.Errorf("can only use nodes/%s on its own node, not on node %q", a.GetSubresource(), target))
	}
	return nil
}

// connectTarget is the name of the object a CONNECT reaches. A proxy
// request's name may carry a scheme and a port ([scheme:]name[:port]),
// which the server strips before it looks the object up; so is it here.
func connectTarget(a admission.Attributes) (string, error) {
	name := a.GetName()
	if a.GetSubresource() == "proxy" {
		_, host, _, ok := utilnet.SplitSchemeNamePort(name)
		if !ok {
			return "", fmt.Errorf("invalid proxy request name %q", name)
		}
		name = host
	}
	if name == "" {
		return "", fmt.Errorf("could not determine the %s from the request", a.GetResource().Resource)
	}
	return name, nil
}
