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

package v1alpha1

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/admitkit/admitkit/plugin/internal/strictdecode"
)

// Validate checks a configuration: its apiVersion, kind and lookups, that
// every label key and taint key is a qualified name, every prefix a DNS
// subdomain, and that nothing lists the reserved
// node-restriction.kubernetes.io namespace, and that each node-scoped
// service account is named once, validly.
// A nil configuration is valid and means Kubernetes' own behaviour.
func (c *Configuration) Validate() field.ErrorList {
	if c == nil {
		return nil
	}
	errs := strictdecode.TypeErrors(c.TypeMeta, metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind})

	switch c.Lookups {
	case "", LookupsInformers, LookupsRequests:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("lookups"), c.Lookups, []Lookups{LookupsInformers, LookupsRequests}))
	}

	errs = append(errs, validateAllowances(nil, c.AllowedLabels, c.AllowedLabelPrefixes, c.AllowedTaintKeys)...)

	accountsPath := field.NewPath("nodeScopedServiceAccounts")
	seen := make(map[string]int, len(c.NodeScopedServiceAccounts))
	for i, sa := range c.NodeScopedServiceAccounts {
		p := accountsPath.Index(i)
		valid := true
		if msgs := validation.IsDNS1123Label(sa.Namespace); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("namespace"), sa.Namespace, strings.Join(msgs, "; ")))
			valid = false
		}
		if msgs := validation.IsDNS1123Subdomain(sa.Name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("name"), sa.Name, strings.Join(msgs, "; ")))
			valid = false
		}
		if valid {
			// A second entry would leave unclear which allowances hold.
			key := sa.Namespace + "/" + sa.Name
			if first, dup := seen[key]; dup {
				errs = append(errs, field.Duplicate(p, fmt.Sprintf("%s (also at %s)", key, accountsPath.Index(first))))
			} else {
				seen[key] = i
			}
		}
		errs = append(errs, validateAllowances(p, sa.AllowedLabels, sa.AllowedLabelPrefixes, sa.AllowedTaintKeys)...)
	}
	return errs
}

// validateAllowances checks the label keys, label prefixes and taint keys
// granted at parent (nil for the kubelets' ones at the top level).
func validateAllowances(parent *field.Path, labels, prefixes, taintKeys []string) field.ErrorList {
	var errs field.ErrorList
	labelsPath := parent.Child("allowedLabels")
	for i, key := range labels {
		p := labelsPath.Index(i)
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p, key, strings.Join(msgs, "; ")))
			continue
		}
		if prefix, _, ok := strings.Cut(key, "/"); ok && IsReservedLabelPrefix(prefix) {
			errs = append(errs, field.Invalid(p, key, reservedMessage))
		}
	}

	prefixesPath := parent.Child("allowedLabelPrefixes")
	for i, prefix := range prefixes {
		p := prefixesPath.Index(i)
		trimmed := strings.TrimSuffix(prefix, "/")
		if msgs := validation.IsDNS1123Subdomain(trimmed); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p, prefix, strings.Join(msgs, "; ")))
			continue
		}
		if IsReservedLabelPrefix(trimmed) {
			errs = append(errs, field.Invalid(p, prefix, reservedMessage))
		}
	}

	taintsPath := parent.Child("allowedTaintKeys")
	for i, key := range taintKeys {
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			errs = append(errs, field.Invalid(taintsPath.Index(i), key, strings.Join(msgs, "; ")))
		}
	}
	return errs
}

const reservedMessage = "labels in the " + corev1.LabelNamespaceNodeRestriction + " namespace are reserved for cluster administrators and can never be allowed to nodes"

// IsReservedLabelPrefix reports whether a label prefix is
// node-restriction.kubernetes.io or one of its subdomains.
func IsReservedLabelPrefix(prefix string) bool {
	return prefix == corev1.LabelNamespaceNodeRestriction || strings.HasSuffix(prefix, "."+corev1.LabelNamespaceNodeRestriction)
}
