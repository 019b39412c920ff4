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
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
)

// nodeUserNamePrefix is how the kubelet client certificates (and the Node
// authorizer) spell a node's user name: system:node:<nodeName>.
const nodeUserNamePrefix = "system:node:"

// NodeIdentifier tells whether a user is a node, and which one.
type NodeIdentifier interface {
	// NodeIdentity returns the node name and true when u is a node. The name
	// may be empty when u is a node whose name could not be determined.
	NodeIdentity(u user.Info) (nodeName string, isNode bool)
}

// NewDefaultNodeIdentifier returns the identifier kube-apiserver uses: a node
// is a user named system:node:<name> who is also in the system:nodes group.
// Requiring both keeps a user who merely chose such a name, or a member of
// the group with another name, out of the node rules.
func NewDefaultNodeIdentifier() NodeIdentifier {
	return defaultNodeIdentifier{}
}

type defaultNodeIdentifier struct{}

// NodeIdentity implements NodeIdentifier without allocating, since it runs
// for every request that reaches the plugin.
func (defaultNodeIdentifier) NodeIdentity(u user.Info) (string, bool) {
	if u == nil {
		return "", false
	}
	name := u.GetName()
	if !strings.HasPrefix(name, nodeUserNamePrefix) {
		return "", false
	}
	for _, g := range u.GetGroups() {
		if g == user.NodesGroup {
			return name[len(nodeUserNamePrefix):], true
		}
	}
	return "", false
}
