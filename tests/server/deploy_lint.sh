#!/bin/bash
# deploy_lint: validates tools/deploy with real tools installed by tools/install-deps.sh:
# the Kubernetes manifests against the API schemas (kubernetes-validate --strict, offline) and
# the Dockerfile with hadolint. A deliberately broken manifest must be rejected, so the check
# cannot pass with a validator that accepts anything.
# usage: deploy_lint.sh SOURCE_DIR
set -euo pipefail
src=$1
for tool in kubernetes-validate hadolint; do
  command -v "$tool" >/dev/null || { echo "deploy_lint: $tool is not installed (run tools/install-deps.sh)"; exit 1; }
done
kubernetes-validate --strict "$src"/tools/deploy/k8s/*.yaml
hadolint "$src"/tools/deploy/Dockerfile
echo "hadolint: tools/deploy/Dockerfile clean"
bad=$(mktemp --suffix=.yaml)
trap 'rm -f "$bad"' EXIT
sed 's/^  replicas: [0-9]*/  replicas: "three"/' "$src"/tools/deploy/k8s/deployment.yaml >"$bad"
if kubernetes-validate --strict "$bad" >/dev/null 2>&1; then
  echo "deploy_lint: FAIL: a Deployment with replicas: \"three\" was accepted"; exit 1
fi
echo "deploy_lint: a broken Deployment (replicas: \"three\") is rejected, as it must be"
