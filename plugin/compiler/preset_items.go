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

package compiler

import (
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// family is one of the four lists a preset merges into a pod: its items,
// in order, and how the plugin identifies them.
type family struct {
	// name is the list's field in the pod's spec or container.
	name string
	// keyNames name the keys in refusals.
	keyNames []string
	entries  []entry
}

// entry is one item of a preset's list.
type entry struct {
	preset int
	path   *field.Path
	item   any
	// keys are the item's values of its list's keys; keyConds are CEL
	// conditions on an item x of the pod's list that it has the same
	// value, and describe how the plugin names the key in a conflict.
	keys     []string
	keyConds []func(x string) string
	describe []string
	// literal is the item as a CEL literal.
	literal string
	refusal field.ErrorList
}

// sharedKey returns the index of a key e shares with other, -1 for none.
func (e *entry) sharedKey(other *entry) int {
	for k := range e.keys {
		if e.keys[k] == other.keys[k] {
			return k
		}
	}
	return -1
}

// differs is true of two items that share a key and are not equal: on one
// pod they conflict.
func (e *entry) differs(other *entry) bool {
	return e.sharedKey(other) >= 0 && !apiequality.Semantic.DeepEqual(e.item, other.item)
}

// familiesOf returns p's volumes, env, envFrom and volumeMounts, in that
// order, their entries tagged with preset index pi.
func familiesOf(p *presetIn, pi int) []family {
	spec := field.NewPath("spec")
	volumes := family{name: "volumes", keyNames: []string{"name"}}
	for i := range p.spec.Volumes {
		v := &p.spec.Volumes[i]
		volumes.entries = append(volumes.entries, newEntry(pi, spec.Child("volumes").Index(i), v,
			[]string{v.Name}, []func(string) string{fieldIs("name", v.Name)}, []string{fmt.Sprintf("volume %q", v.Name)}))
	}
	env := family{name: "env", keyNames: []string{"name"}}
	for i := range p.spec.Env {
		e := &p.spec.Env[i]
		env.entries = append(env.entries, newEntry(pi, spec.Child("env").Index(i), e,
			[]string{e.Name}, []func(string) string{fieldIs("name", e.Name)}, []string{fmt.Sprintf("env %q", e.Name)}))
	}
	envFrom := family{name: "envFrom", keyNames: []string{"prefix, configMapRef and secretRef"}}
	for i := range p.spec.EnvFrom {
		e := &p.spec.EnvFrom[i]
		envFrom.entries = append(envFrom.entries, newEntry(pi, spec.Child("envFrom").Index(i), e,
			[]string{envFromKey(e)}, []func(string) string{envFromIs(e)}, []string{describeEnvFrom(e)}))
	}
	mounts := family{name: "volumeMounts", keyNames: []string{"name", "mountPath"}}
	for i := range p.spec.VolumeMounts {
		m := &p.spec.VolumeMounts[i]
		mounts.entries = append(mounts.entries, newEntry(pi, spec.Child("volumeMounts").Index(i), m,
			[]string{m.Name, m.MountPath}, []func(string) string{fieldIs("name", m.Name), fieldIs("mountPath", m.MountPath)},
			[]string{fmt.Sprintf("volumeMount %q", m.Name), fmt.Sprintf("volumeMount at %q", m.MountPath)}))
	}
	return []family{volumes, env, envFrom, mounts}
}

func newEntry(pi int, path *field.Path, item any, keys []string, conds []func(string) string, describe []string) entry {
	e := entry{preset: pi, path: path, item: item, keys: keys, keyConds: conds, describe: describe}
	if at := comparedByValue(reflect.ValueOf(item), path); at != nil {
		e.refusal = append(e.refusal, field.Forbidden(at, "the plugin compares it with the pod's by value, a policy would compare their JSON text: not compiled"))
		return e
	}
	literal, err := celLiteral(item)
	if err != nil {
		e.refusal = append(e.refusal, field.Invalid(path, item, err.Error()))
		return e
	}
	e.literal = literal
	return e
}

// fieldIs is a condition that an item's string field is value; the keys
// that use it (names, mount paths) are always present on a pod's item.
func fieldIs(name, value string) func(string) string {
	return func(x string) string { return x + "." + name + " == " + celString(value) }
}

// envFromKey is the plugin's key of an envFrom source: everything but
// optional, as one string (quoted parts, which no two keys share).
func envFromKey(e *corev1.EnvFromSource) string {
	prefix, configMap, secret := envFromKeyParts(e)
	return celStrings([]string{prefix, configMap, secret})
}

func envFromKeyParts(e *corev1.EnvFromSource) (prefix, configMap, secret string) {
	if e.ConfigMapRef != nil {
		configMap = e.ConfigMapRef.Name
	}
	if e.SecretRef != nil {
		secret = e.SecretRef.Name
	}
	return e.Prefix, configMap, secret
}

func envFromIs(e *corev1.EnvFromSource) func(string) string {
	prefix, configMap, secret := envFromKeyParts(e)
	return func(x string) string {
		return fmt.Sprintf("(%[1]s.?prefix.orValue(\"\") == %[2]s && %[1]s.?configMapRef.?name.orValue(\"\") == %[3]s && %[1]s.?secretRef.?name.orValue(\"\") == %[4]s)",
			x, celString(prefix), celString(configMap), celString(secret))
	}
}

// describeEnvFrom names an envFrom source as the plugin does.
func describeEnvFrom(e *corev1.EnvFromSource) string {
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
}

var (
	quantityType = reflect.TypeFor[resource.Quantity]()
	timeType     = reflect.TypeFor[metav1.Time]()
)

// comparedByValue returns the path of the first field set in v that the
// plugin's equality compares by value rather than by its JSON text: a
// quantity ("1Gi" equals "1073741824") or a time. Nil when there is none.
func comparedByValue(v reflect.Value, path *field.Path) *field.Path {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return comparedByValue(v.Elem(), path)
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			if at := comparedByValue(v.Index(i), path.Index(i)); at != nil {
				return at
			}
		}
	case reflect.Struct:
		if v.Type() == quantityType || v.Type() == timeType {
			if v.IsZero() {
				return nil
			}
			return path
		}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			child := path
			if !f.Anonymous || name != "" {
				child = path.Child(name)
			}
			if at := comparedByValue(v.Field(i), child); at != nil {
				return at
			}
		}
	}
	return nil
}
