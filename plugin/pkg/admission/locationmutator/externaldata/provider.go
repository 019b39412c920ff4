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

package externaldata

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/admitkit/admitkit/plugin/pkg/admission/locationmutator/apis/externaldata/v1beta1"
)

// Bounds on a Provider's timeout, in seconds. Zero takes DefaultTimeout,
// the wait Gatekeeper's mutation gives a provider without one.
const (
	DefaultTimeout = 5 * time.Second
	MaxTimeout     = 30
)

// Provider is a validated Provider object, ready to be called. It is
// immutable: an edited Provider compiles into a new one, whose cached
// answers are apart from the old one's.
type Provider struct {
	name    string
	url     string
	timeout time.Duration
	client  *http.Client
	// epoch tells this compilation's cached answers from those of an
	// earlier one with the same name.
	epoch uint64
}

var epochs atomic.Uint64

// Name is the Provider's name, which mutators refer to.
func (p *Provider) Name() string { return p.name }

// URL is where the provider is called.
func (p *Provider) URL() string { return p.url }

// Timeout is the longest a call may take.
func (p *Provider) Timeout() time.Duration { return p.timeout }

// Compile validates a Provider object and builds its HTTPS client, which
// presents cert's certificate when the provider asks for one (cert may be
// nil). The errors name the fields at fault.
func Compile(obj *v1beta1.Provider, cert *ClientCertificate) (*Provider, field.ErrorList) {
	errs := validateName(obj.Name)
	spec := field.NewPath("spec")
	u, uerrs := validateURL(obj.Spec.URL, spec.Child("url"))
	errs = append(errs, uerrs...)
	if obj.Spec.Timeout < 0 || obj.Spec.Timeout > MaxTimeout {
		errs = append(errs, field.Invalid(spec.Child("timeout"), obj.Spec.Timeout, fmt.Sprintf("must be between 0 (the default, %v) and %d seconds", DefaultTimeout, MaxTimeout)))
	}
	roots, cerrs := parseCABundle(obj.Spec.CABundle, spec.Child("caBundle"))
	errs = append(errs, cerrs...)
	if len(errs) > 0 {
		return nil, errs
	}
	timeout := time.Duration(obj.Spec.Timeout) * time.Second
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	return &Provider{
		name:    obj.Name,
		url:     u.String(),
		timeout: timeout,
		client:  newHTTPClient(roots, cert),
		epoch:   epochs.Add(1),
	}, nil
}

func validateName(name string) field.ErrorList {
	p := field.NewPath("metadata", "name")
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// validateURL accepts an absolute https URL with a host and no user
// information: credentials in a URL would end up in logs and errors.
func validateURL(raw string, p *field.Path) (*url.URL, field.ErrorList) {
	if raw == "" {
		return nil, field.ErrorList{field.Required(p, "the provider's https URL")}
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, field.ErrorList{field.Invalid(p, raw, err.Error())}
	case u.Scheme != "https":
		return nil, field.ErrorList{field.Invalid(p, raw, "only https is supported")}
	case u.Host == "" || u.Hostname() == "":
		return nil, field.ErrorList{field.Invalid(p, raw, "must name a host")}
	case u.User != nil:
		return nil, field.ErrorList{field.Invalid(p, u.Redacted(), "must not hold credentials")}
	case u.Fragment != "":
		return nil, field.ErrorList{field.Invalid(p, raw, "must not have a fragment")}
	}
	return u, nil
}

// parseCABundle decodes the base64 PEM bundle into a pool; every PEM block
// must be a certificate, and there must be at least one.
func parseCABundle(bundle string, p *field.Path) (*x509.CertPool, field.ErrorList) {
	if bundle == "" {
		return nil, field.ErrorList{field.Required(p, "the base64-encoded PEM certificates that sign the provider's serving certificate")}
	}
	data, err := base64.StdEncoding.DecodeString(bundle)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(p, "<caBundle>", "not base64: "+err.Error())}
	}
	pool := x509.NewCertPool()
	n := 0
	for len(data) > 0 {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, field.ErrorList{field.Invalid(p, "<caBundle>", fmt.Sprintf("holds a PEM block of type %q, want CERTIFICATE", block.Type))}
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, field.ErrorList{field.Invalid(p, "<caBundle>", "bad certificate: "+err.Error())}
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, field.ErrorList{field.Invalid(p, "<caBundle>", "holds no PEM certificate")}
	}
	return pool, nil
}
