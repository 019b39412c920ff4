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

# Every .go file starts with hack/boilerplate.go.txt's license header (after
# a //go:build block, which the generators put first) and then a blank line,
# so that go doc never reads the license as the package's documentation. The
# copies of kube-apiserver's own files in test/apiserver keep upstream's
# notice, as the license asks: "The Kubernetes Authors" in place of ours.
step "license headers"
header=$(<hack/boilerplate.go.txt) # without its trailing blank line
header_lines=$(printf '%s\n' "${header}" | wc -l)
upstream_header=${header/The admitkit Authors/The Kubernetes Authors}
missing=()
while IFS= read -r -d '' file; do
    skip=0
    if [[ "$(sed -n '1p;1q' "${file}")" == '//go:build '* ]]; then
        skip=$(awk 'NF == 0 {print NR; exit}' "${file}")
    fi
    # sed reads the lines it prints and quits: a pipe into head would
    # end the writer with SIGPIPE on a large file, which pipefail and
    # errexit turn into a silent exit of this script.
    first=$(sed -n "$((skip + 1)),$((skip + header_lines))p;$((skip + header_lines))q" "${file}")
    after=$(sed -n "$((skip + header_lines + 1))p;$((skip + header_lines + 1))q" "${file}")
    if [[ "${first}" == "${upstream_header}" && "${file}" == ./test/apiserver/* ]]; then
        first=${header}
    fi
    if [[ "${first}" != "${header}" || -n "${after}" ]]; then
        missing+=("${file}")
    fi
done < <(find . -name '*.go' -not -path './_output/*' -not -path './test/_output/*' -print0)
if [[ ${#missing[@]} -gt 0 ]]; then
    echo "Not starting with hack/boilerplate.go.txt's header and a blank line:" >&2
    printf '%s\n' "${missing[@]}" >&2
    exit 1
fi

# vet, staticcheck (through the export data it asks go list for) and the
# tests all build with -race, so that one compile of every dependency
# serves all three: a cold run compiles kube-apiserver's tree once, not
# once for the checks and again for the tests.
step "go vet"
go vet -race ./...

# One staticcheck, at the version hack/tools/go.mod pins, for both modules.
# generated/ is left out: it is the code generators' output, which we never
# edit, and it uses client-go and core/v1 names that staticcheck reports as
# deprecated.
step "staticcheck"
STATICCHECK=$(cd hack/tools && go tool -n staticcheck)
GOFLAGS="${GOFLAGS:-} -race" "${STATICCHECK}" $(go list ./... | grep -v "^github.com/admitkit/admitkit/generated/")
if [[ -f test/go.mod ]]; then
    (cd test && GOFLAGS="${GOFLAGS:-} -race" "${STATICCHECK}" ./...)
fi

# A module that imports admitkit gets the root module's requirements. The
# generators and staticcheck live in hack/tools/go.mod so that it gets none
# of theirs: fail when go.mod names a tool, requires a module the tools
# share with it that no package of the library (on any platform, tests
# included) needs, or when a generator or linter shows up anywhere in the
# root module's graph.
step "no tool modules in the library's module graph"
if grep -q '^tool' go.mod; then
    echo "go.mod has tool directives: tools belong in hack/tools/go.mod" >&2
    exit 1
fi
requires() { # go.mod
    awk '/^require \(/ {block = 1; next} block && /^\)/ {block = 0} block {print $1} /^require [^(]/ {print $2}' "$1" | sort -u
}
shared=$(comm -12 <(requires go.mod) <(requires hack/tools/go.mod))
stray=$(go mod why -m ${shared} | sed -n 's/^(main module does not need module \(.*\))$/\1/p')
if [[ -n "${stray}" ]]; then
    echo "go.mod requires modules that only hack/tools needs (go mod tidy removes them):" >&2
    echo "${stray}" >&2
    exit 1
fi
tools_in_graph=$(go mod graph | tr ' ' '\n' | sed 's/@.*//' | sort -u |
    grep -Fx -e honnef.co/go/tools -e k8s.io/code-generator -e sigs.k8s.io/controller-tools \
        -e k8s.io/apiextensions-apiserver -e github.com/gobuffalo/flect || true)
if [[ -n "${tools_in_graph}" ]]; then
    echo "the root module's graph (go mod graph) names generator or linter modules:" >&2
    echo "${tools_in_graph}" >&2
    exit 1
fi

step "verify-codegen"
hack/verify-codegen.sh

# The library's unit tests run beside the test/ module's, at the lowest
# CPU priority. The test/ module's compile and then its kube-apiserver
# tests are the longest path of a run, and those tests leave a core
# mostly idle while the servers they start wait on each other: the unit
# tests take that idle time instead of adding theirs to the path. Their
# output is printed whole when both are done, and either failing fails the
# run. plugin/cmd/admitkit's TestGoInstall builds admitkit's whole graph
# from an empty module cache at that priority, and hack/manifests' chart
# tests build the helm hack/tools pins on first use (about 230 s of CPU
# cold), both longer than go test's default ten minutes a package on a busy
# machine; they too take the test/ module's idle time.
unit_log=$(mktemp)
nice -n 19 go test -race -count=1 -timeout 45m ./... >"${unit_log}" 2>&1 &
unit_tests=$!
# The proof of every difference from Gatekeeper the README lists: the
# same mutators through Gatekeeper's mutation system and through ours,
# with and without external data (test/bench/gatekeeper, a module of its
# own that Gatekeeper's tree never leaves). Beside the test/ module too,
# at the unit tests' priority, and with -race so that it builds on the
# k8s.io packages go vet compiled: with an empty build cache it costs 406
# CPU seconds (313 without -race, which would share nothing), of which
# about four fifths compile packages vet's build already holds; its tests
# then run for 10 to 30 seconds.
gatekeeper_log=$(mktemp)
# (go -C, not a subshell's cd: $! is then go's own pid, which the trap
# below can end.)
nice -n 19 go -C test/bench/gatekeeper test -race -count=1 \
    -run '^(TestSameResult|TestSameResultUnstructured|TestGatekeeperDifferences|TestExternalDataSameResult|TestGatekeeperDummyProvider)$' . \
    >"${gatekeeper_log}" 2>&1 &
gatekeeper_tests=$!
# Can each test fail for the reason it exists? (test/README.md, the
# mutation check): each plugin entry point's body made a no-op or an early
# error must turn its package's tests red. Beside the test/ module too, at
# the same priority, with -race so that its test binaries build on what
# vet and the unit tests compiled (about 3.5 minutes with those cached).
mutation_log=$(mktemp)
nice -n 19 go run ./hack/mutationcheck -race >"${mutation_log}" 2>&1 &
mutation_check=$!
# On the way out, whatever ended the run: the tests still going end with
# it. `|| true`: errexit holds in the trap too, and the kill of a job
# already done fails, which would turn a passing run's exit into 1.
trap 'kill "${unit_tests}" "${gatekeeper_tests}" "${mutation_check}" 2>/dev/null || true; rm -f "${unit_log}" "${gatekeeper_log}" "${mutation_log}"' EXIT
failed=()

if [[ -f test/go.mod ]]; then
    step "kube-apiserver tests (test/), the unit tests beside them"
    if ! (cd test && go vet -race ./... && go test -race -count=1 -timeout 45m ./...); then
        failed+=("kube-apiserver tests (test/)")
    fi
fi

step "unit tests"
if ! wait "${unit_tests}"; then
    failed+=("unit tests")
fi
cat "${unit_log}"

step "the Gatekeeper proof (test/bench/gatekeeper)"
if ! wait "${gatekeeper_tests}"; then
    failed+=("the Gatekeeper proof (test/bench/gatekeeper)")
fi
cat "${gatekeeper_log}"

step "the mutation check (hack/mutationcheck)"
if ! wait "${mutation_check}"; then
    failed+=("the mutation check (hack/mutationcheck)")
fi
cat "${mutation_log}"
if [[ ${#failed[@]} -gt 0 ]]; then
    printf 'FAILED: %s\n' "${failed[@]}" >&2
    exit 1
fi

# The Helm chart, with the helm the unit tests built: lint (warnings fail)
# and the default rendering, which hack/manifests/chart_test.go compares
# with hack/manifests; then the order helm install, helm uninstall and
# kubectl apply -k apply it in, by Helm's and kustomize's own code
# (hack/tools/installorder, which links packages the helm build compiled).
step "helm lint, helm template, install order (hack/chart/admitkit)"
HELM=$(cd hack/tools && go tool -n helm)
"${HELM}" lint --strict hack/chart/admitkit
"${HELM}" template admitkit hack/chart/admitkit --namespace admitkit-system >/dev/null
(cd hack/tools && go test -count=1 ./installorder)

# The walkthrough's examples as an admit test suite (README, "Testing
# presets and mutators"), through the offline host of the server binary.
# Built with -race, as the tests build it, so that a cold run links it
# from packages it already compiled.
step "admit test hack/examples/tests"
go build -race -o _output/admitkit ./plugin/cmd/admitkit
_output/admitkit admit test hack/examples/tests
