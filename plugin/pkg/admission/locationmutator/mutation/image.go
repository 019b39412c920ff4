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

package mutation

import (
	"fmt"
	"regexp"
	"strings"
)

// An image reference is read as domain "/" path tag, where the domain is the
// first slash-separated part only if it looks like a host (has a `.` or a
// `:`, or is localhost) and the tag starts at the first `:` or `@` after the
// domain. AssignImage replaces some of the three parts. The validation below
// exists for convergence: if an assigned part could be read back as a
// different part on the next pass, the image would keep growing. These
// expressions are the validation of each part.
var (
	imageDomainRE = regexp.MustCompile(`^(?:localhost|[A-Za-z0-9_][A-Za-z0-9_-]*\.[A-Za-z0-9_.-]*[A-Za-z0-9_])(?::[0-9]+)?$`)
	imagePathRE   = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$`)
	imageTagRE    = regexp.MustCompile(`^(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}|@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,})$`)
)

type imageRef struct {
	domain, path, tag string
}

func splitImage(ref string) imageRef {
	var img imageRef
	rest := ref
	if i := strings.IndexByte(ref, '/'); i >= 0 {
		if first := ref[:i]; strings.ContainsAny(first, ".:") || first == "localhost" {
			img.domain, rest = first, ref[i+1:]
		}
	}
	if i := strings.IndexAny(rest, ":@"); i >= 0 {
		img.path, img.tag = rest[:i], rest[i:]
	} else {
		img.path = rest
	}
	return img
}

func (img imageRef) String() string {
	if img.domain == "" {
		return img.path + img.tag
	}
	return img.domain + "/" + img.path + img.tag
}

// validateImageParts returns why the parts could not converge, or "".
func validateImageParts(domain, path, tag string) string {
	if domain == "" && path == "" && tag == "" {
		return "at least one of assignDomain, assignPath or assignTag must be set"
	}
	if domain != "" {
		if !imageDomainRE.MatchString(domain) {
			return fmt.Sprintf("assignDomain %q must be a host name with a dot (or localhost), with an optional :port", domain)
		}
		if got := splitImage(domain + "/x"); got.domain != domain {
			return fmt.Sprintf("assignDomain %q would not be read back as a domain", domain)
		}
	}
	if path != "" && !imagePathRE.MatchString(path) {
		return fmt.Sprintf("assignPath %q must be lower-case path components separated by /", path)
	}
	if tag != "" {
		if !imageTagRE.MatchString(tag) {
			return fmt.Sprintf("assignTag %q must be :tag (at most 128 characters) or @algorithm:hex digest (32 or more hex digits)", tag)
		}
		if got := splitImage("x" + tag); got.tag != tag {
			return fmt.Sprintf("assignTag %q would not be read back as a tag", tag)
		}
	}
	if domain == "" && path != "" {
		if got := splitImage(path); got.domain != "" {
			return fmt.Sprintf("assignPath %q starts with something that reads as a domain; set assignDomain as well", path)
		}
	}
	return ""
}
