#!/usr/bin/env bash
# Runs every check and test of the project: formatting, vet, staticcheck,
# generated code drift, the library's unit tests (with the race detector),
# and the kube-apiserver tests of the test/ module.
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
export PATH="${PATH}:/usr/local/go/bin"

step() { printf '\n=== %s\n' "$*"; }

step "gofmt"
unformatted=$(find . -name '*.go' -not -path './_output/*' -not -path './test/_output/*' -print0 | xargs -0 gofmt -l)
if [[ -n "${unformatted}" ]]; then
    echo "Not gofmt-clean (run gofmt -w):" >&2
    echo "${unformatted}" >&2
    exit 1
fi

step "go vet"
go vet ./...

# One staticcheck, at the version go.mod pins with a tool directive, for
# both modules. generated/ is left out: it is the code generators' output,
# which we never edit, and it uses client-go and core/v1 names that
# staticcheck reports as deprecated.
step "staticcheck"
STATICCHECK=$(go tool -n staticcheck)
"${STATICCHECK}" $(go list ./... | grep -v "^github.com/admitkit/admitkit/generated/")
if [[ -f test/go.mod ]]; then
    (cd test && "${STATICCHECK}" ./...)
fi

step "verify-codegen"
hack/verify-codegen.sh

step "unit tests"
go test -race -count=1 ./...

if [[ -f test/go.mod ]]; then
    step "kube-apiserver tests (test/)"
    (cd test && go vet ./... && go test -race -count=1 -timeout 45m ./...)
fi
