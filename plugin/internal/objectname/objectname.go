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

// Package objectname names the object of an admission request in the
// messages a plugin writes (errors, warnings, Events, logs, audit
// annotations), one way for every plugin: "Deployment.apps shop/web", or
// "Pod shop/web-*" for an object whose name the server has not generated
// yet.
package objectname

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Of names an object of kind gk: its kind (with the group, unless it is
// the core group), its namespace (when it has one) and its name, or its
// generateName followed by "*" while it has no name.
func Of(gk schema.GroupKind, namespace, name, generateName string) string {
	kind := gk.Kind
	if gk.Group != "" {
		kind += "." + gk.Group
	}
	if name == "" && generateName != "" {
		name = generateName + "*"
	}
	if namespace != "" {
		return kind + " " + namespace + "/" + name
	}
	return kind + " " + name
}
