#!/usr/bin/env bash
# Regenerates every generated file: deepcopy, conversion and defaulters
# beside the API types, and OpenAPI definitions, the typed clientset,
# listers, informers and apply configurations under generated/.
# Then the CustomResourceDefinitions of the LocationMutator's mutator kinds
# and of Gatekeeper's external data Provider
# (plugin/pkg/admission/locationmutator/crds/manifests), from the types in
# its apis/mutations and apis/externaldata, and of settings.k8s.io
# (registry/settings/crds/manifests), from apis/settings/v1alpha1, both
# embedded for Go callers and copied into hack/manifests, the install on a
# stock cluster, and into the Helm chart's crds/ (hack/chart/admitkit).
# The generators are k8s.io/code-generator's kube_codegen.sh (which builds
# its generators, openapi-gen included, in code-generator's own module) and
# controller-tools' controller-gen, at the versions hack/tools/go.mod pins.
# That module is apart from the library's so that a module importing
# admitkit never gets the generators in its module graph; the generators
# still run here, at the root, because they load the library's packages.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
MODULE=github.com/admitkit/admitkit
TOOLS="${ROOT}/hack/tools"

# go list prints no directory for a module that is not in the module cache
# yet (a new machine), so fetch the generators' modules first.
if ! (cd "${TOOLS}" && go mod download k8s.io/code-generator sigs.k8s.io/controller-tools); then
    echo "update-codegen: cannot download k8s.io/code-generator and sigs.k8s.io/controller-tools for ${TOOLS}/go.mod (check GOPROXY and the network)" >&2
    exit 1
fi
CODEGEN_PKG=$(cd "${TOOLS}" && go list -m -f '{{.Dir}}' k8s.io/code-generator)
if [[ ! -f "${CODEGEN_PKG}/kube_codegen.sh" ]]; then
    echo "update-codegen: kube_codegen.sh not found in k8s.io/code-generator (module directory '${CODEGEN_PKG}')" >&2
    exit 1
fi
# Generators build into the project's own output folder, never into $GOPATH/bin.
export GOBIN="${GOBIN_OVERRIDE:-${ROOT}/_output/bin}"
mkdir -p "${GOBIN}"
source "${CODEGEN_PKG}/kube_codegen.sh"
# core/v1 types appear inside ours; their generated model names are read, never rewritten.
KUBE_CODEGEN_READONLY_PKGS+=(k8s.io/api/core/v1)

BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"

kube::codegen::gen_helpers \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/apis"

kube::codegen::gen_openapi \
    --output-dir "${ROOT}/generated/openapi" \
    --output-pkg "${MODULE}/generated/openapi" \
    --output-model-name-file zz_generated.model_name.go \
    --extra-pkgs k8s.io/api/core/v1 \
    --extra-pkgs k8s.io/apimachinery/pkg/util/intstr \
    --report-filename "${ROOT}/hack/api-rules/violation_exceptions.list" \
    --update-report \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/apis"

externals="k8s.io/api/core/v1.EnvVar:k8s.io/client-go/applyconfigurations/core/v1"
externals+=",k8s.io/api/core/v1.EnvFromSource:k8s.io/client-go/applyconfigurations/core/v1"
externals+=",k8s.io/api/core/v1.Volume:k8s.io/client-go/applyconfigurations/core/v1"
externals+=",k8s.io/api/core/v1.VolumeMount:k8s.io/client-go/applyconfigurations/core/v1"

kube::codegen::gen_client \
    --with-watch \
    --with-applyconfig \
    --applyconfig-externals "${externals}" \
    --applyconfig-openapi-schema <(go run "${MODULE}/generated/openapi/cmd/models-schema") \
    --output-dir "${ROOT}/generated" \
    --output-pkg "${MODULE}/generated" \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/apis"

# One file per CRD; each directory is emptied first so that a kind that goes
# away leaves no stale manifest behind.
CONTROLLER_GEN=$(cd "${TOOLS}" && go tool -n controller-gen)
MANIFESTS="${ROOT}/hack/manifests"
CHART_CRDS="${ROOT}/hack/chart/admitkit/crds"
rm -f "${MANIFESTS}"/crd-*.yaml "${CHART_CRDS}"/*.yaml
gen_crds() { # dir types...
    local dir=$1
    shift
    mkdir -p "${dir}"
    rm -f "${dir}"/*.yaml
    "${CONTROLLER_GEN}" crd "${@/#/paths=}" output:crd:dir="${dir}"
    local f
    for f in "${dir}"/*.yaml; do
        cp "${f}" "${MANIFESTS}/crd-$(basename "${f}")"
        cp "${f}" "${CHART_CRDS}/$(basename "${f}")"
    done
}
gen_crds "${ROOT}/plugin/pkg/admission/locationmutator/crds/manifests" \
    ./plugin/pkg/admission/locationmutator/apis/mutations/... \
    ./plugin/pkg/admission/locationmutator/apis/externaldata/...
gen_crds "${ROOT}/registry/settings/crds/manifests" ./apis/settings/v1alpha1/...
