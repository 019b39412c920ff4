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

package objectname

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestOf(t *testing.T) {
	for _, tt := range []struct {
		gk                            schema.GroupKind
		namespace, name, generateName string
		want                          string
	}{
		{schema.GroupKind{Kind: "Pod"}, "shop", "web", "", "Pod shop/web"},
		{schema.GroupKind{Kind: "Pod"}, "shop", "", "web-", "Pod shop/web-*"},
		{schema.GroupKind{Kind: "Pod"}, "shop", "web", "web-", "Pod shop/web"},
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, "shop", "web", "", "Deployment.apps shop/web"},
		{schema.GroupKind{Kind: "Namespace"}, "", "shop", "", "Namespace shop"},
	} {
		if got := Of(tt.gk, tt.namespace, tt.name, tt.generateName); got != tt.want {
			t.Errorf("Of(%v, %q, %q, %q) = %q, want %q", tt.gk, tt.namespace, tt.name, tt.generateName, got, tt.want)
		}
	}
}
