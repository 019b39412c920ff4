#!/usr/bin/env bash
# Fails when a generated file differs from what hack/update-codegen.sh
# makes now: the generators run on a temporary copy of the tree, and the
# copy is compared with the working tree.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "${WORK}"' EXIT

# Everything the generators read or write, and nothing else (test/ is its own
# module). controller-gen type-checks the mutator types, which import other
# packages of plugin/, so all of plugin/ goes along, and registry/ for the
# settings CRDs' directory.
for path in go.mod go.sum hack apis generated plugin registry; do
    cp -a "${ROOT}/${path}" "${WORK}/"
done
GOBIN_OVERRIDE="${ROOT}/_output/bin" "${WORK}/hack/update-codegen.sh" >/dev/null

status=0
for path in apis generated hack/api-rules hack/manifests hack/chart/admitkit/crds plugin/pkg/admission/locationmutator/crds/manifests registry/settings/crds/manifests; do
    diff -Nru "${ROOT}/${path}" "${WORK}/${path}" || status=1
done
if [[ ${status} -ne 0 ]]; then
    echo "Generated code is out of date: run hack/update-codegen.sh and commit the result." >&2
    exit 1
fi
echo "Generated code is up to date."
