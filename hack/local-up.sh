#!/usr/bin/env bash
# Builds and starts admitkit's kube-apiserver on 127.0.0.1 with PodPreset,
# NodeRestriction and LocationMutator enabled, an embedded etcd, a token file
# with an admin and a node identity, and kubeconfigs for both; then prints
# kubectl commands to try against hack/examples/. Ctrl-C stops it; running
# the script again restarts it on the same data.
#
# Environment:
#   DATA_DIR      data directory (default _output/local-up)
#   SECURE_PORT   port to serve on (default 6443)
#   NODE_NAME     the node identity (default node-1)
#   SKIP_BUILD    set to reuse the binaries in _output/bin
set -o errexit -o nounset -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${ROOT}"
export PATH="${PATH}:/usr/local/go/bin"

DATA_DIR=${DATA_DIR:-_output/local-up}
SECURE_PORT=${SECURE_PORT:-6443}
NODE_NAME=${NODE_NAME:-node-1}
BIN_DIR="${ROOT}/_output/bin"
mkdir -p "${DATA_DIR}" "${BIN_DIR}"
DATA_DIR=$(cd "${DATA_DIR}" && pwd)

if [[ -z "${SKIP_BUILD:-}" ]]; then
    echo "Building admitkit-apiserver and kubectl into ${BIN_DIR} (a few minutes the first time)..."
    (cd test && go build -o "${BIN_DIR}/admitkit-apiserver" ./cmd/admitkit-apiserver \
        && go build -o "${BIN_DIR}/kubectl" k8s.io/kubernetes/cmd/kubectl)
fi
APISERVER="${BIN_DIR}/admitkit-apiserver"
KUBECTL="${BIN_DIR}/kubectl"

# Tokens are made once and kept, so kubeconfigs stay valid across restarts.
TOKENS="${DATA_DIR}/tokens.csv"
if [[ ! -f "${TOKENS}" ]]; then
    token() { head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
    umask 077
    {
        echo "$(token),admin,admin,system:masters"
        echo "$(token),system:node:${NODE_NAME},node-${NODE_NAME},system:nodes"
    } > "${TOKENS}"
    umask 022
fi
ADMIN_TOKEN=$(sed -n 1p "${TOKENS}" | cut -d, -f1)
NODE_TOKEN=$(grep ",system:node:${NODE_NAME}," "${TOKENS}" | cut -d, -f1)
if [[ -z "${NODE_TOKEN}" ]]; then
    echo "${TOKENS} has no identity for node ${NODE_NAME}; remove the file to start over" >&2
    exit 1
fi

write_kubeconfig() { # file user token
    cat > "$1" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: admitkit
  cluster:
    server: https://127.0.0.1:${SECURE_PORT}
    certificate-authority: ${DATA_DIR}/certs/apiserver.crt
users:
- name: $2
  user:
    token: $3
contexts:
- name: $2
  context:
    cluster: admitkit
    user: $2
current-context: $2
KUBECONFIG
    chmod 600 "$1"
}
ADMIN_KUBECONFIG="${DATA_DIR}/admin.kubeconfig"
NODE_KUBECONFIG="${DATA_DIR}/${NODE_NAME}.kubeconfig"
write_kubeconfig "${ADMIN_KUBECONFIG}" admin "${ADMIN_TOKEN}"
write_kubeconfig "${NODE_KUBECONFIG}" "system:node:${NODE_NAME}" "${NODE_TOKEN}"

LOG="${DATA_DIR}/apiserver.log"
echo "Starting admitkit-apiserver on https://127.0.0.1:${SECURE_PORT} (data in ${DATA_DIR}, log in ${LOG})..."
"${APISERVER}" \
    --data-dir="${DATA_DIR}" \
    --bind-address=127.0.0.1 \
    --advertise-address=127.0.0.1 \
    --secure-port="${SECURE_PORT}" \
    --endpoint-reconciler-type=none \
    --service-cluster-ip-range=10.0.0.0/24 \
    --token-auth-file="${TOKENS}" \
    --authorization-mode=Node,RBAC \
    --runtime-config=settings.k8s.io/v1alpha1=true \
    --enable-admission-plugins=PodPreset,NodeRestriction,LocationMutator \
    --admission-control-config-file=hack/examples/admission-config.yaml \
    >"${LOG}" 2>&1 &
APISERVER_PID=$!

stop() {
    trap - INT TERM EXIT
    if kill -0 "${APISERVER_PID}" 2>/dev/null; then
        echo
        echo "Stopping admitkit-apiserver (pid ${APISERVER_PID})..."
        kill -TERM "${APISERVER_PID}" 2>/dev/null || true
        wait "${APISERVER_PID}" 2>/dev/null || true
    fi
    echo "Stopped. Run hack/local-up.sh again to restart on the same data (${DATA_DIR})."
}
trap stop INT TERM EXIT

for _ in $(seq 1 120); do
    if ! kill -0 "${APISERVER_PID}" 2>/dev/null; then
        echo "admitkit-apiserver exited during start-up; the end of ${LOG}:" >&2
        tail -n 20 "${LOG}" >&2
        exit 1
    fi
    if "${KUBECTL}" --kubeconfig="${ADMIN_KUBECONFIG}" get --raw /readyz >/dev/null 2>&1; then
        break
    fi
    sleep 1
done
if ! "${KUBECTL}" --kubeconfig="${ADMIN_KUBECONFIG}" get --raw /readyz >/dev/null 2>&1; then
    echo "admitkit-apiserver was not ready after 120s; see ${LOG}" >&2
    exit 1
fi

K="${KUBECTL#"${ROOT}/"} --kubeconfig=${ADMIN_KUBECONFIG#"${ROOT}/"}"
N="${KUBECTL#"${ROOT}/"} --kubeconfig=${NODE_KUBECONFIG#"${ROOT}/"}"
cat <<EOF

admitkit-apiserver is ready. From ${ROOT}, try:

  # settings.k8s.io is served next to the built-in APIs (--runtime-config turned it on)
  ${K} api-resources --api-group=settings.k8s.io
  ${K} explain podpresets.spec

  # a namespace (the LocationMutator labels it managed-by=admitkit), two presets, a pod
  ${K} apply -f hack/examples/namespace.yaml
  ${K} get namespace shop --show-labels
  ${K} apply -n shop -f hack/examples/podpreset.yaml
  ${K} apply -f hack/examples/clusterpodpreset.yaml
  ${K} get podpresets -n shop
  ${K} get clusterpodpresets
  ${K} apply -f hack/examples/pod.yaml
  ${K} get pod website -n shop -o jsonpath='{.metadata.annotations}{"\n"}{range .spec.containers[*]}{.name}: {.imagePullPolicy} {.env}{"\n"}{end}'

  # a pod that conflicts with a preset is admitted without presets, with a warning
  ${K} apply -f hack/examples/conflicting-pod.yaml

  # NodeRestriction, as ${NODE_NAME}: it registers itself and sets its own label...
  ${N} apply -f hack/examples/node.yaml
  ${N} label node ${NODE_NAME} example.com/rack=r1
  # ...and is refused these two (Forbidden)
  ${N} label node ${NODE_NAME} node-restriction.kubernetes.io/trusted=true
  ${N} label node ${NODE_NAME} node-role.kubernetes.io/control-plane=

Press Ctrl-C to stop.
EOF

wait "${APISERVER_PID}"
