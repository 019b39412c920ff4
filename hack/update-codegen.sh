#!/usr/bin/env bash
# Regenerates every generated file: deepcopy, conversion and defaulters
# beside the API types, and OpenAPI definitions, the typed clientset,
# listers, informers and apply configurations under generated/.
# The generators are k8s.io/code-generator's kube_codegen.sh and
# kube-openapi's openapi-gen at the versions go.mod pins with tool directives.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
MODULE=github.com/admitkit/admitkit

CODEGEN_PKG=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
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
