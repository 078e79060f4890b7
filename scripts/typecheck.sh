#!/usr/bin/env bash
# make test's type check. No cache: a clean clone gains nothing from one, and mypy's sqlite cache is the
# only state it writes. Tracebacks on, and one rerun when mypy itself crashes (an INTERNAL ERROR is a bug
# in mypy, not a type error): CI's clean clone once stopped there with no file named (mypy 2.4.1), which
# three fresh clones here did not repeat. A type error fails at once.
set -uo pipefail
mypy="${1:?usage: scripts/typecheck.sh PATH/TO/mypy [ARGS...]}"
shift
run() { "$mypy" --show-traceback --cache-dir=/dev/null "$@" 2>&1; }
out=$(run "$@")
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 0 ] && grep -q "INTERNAL ERROR" <<<"$out"; then
  echo "mypy crashed (its own error, traceback above); running it once more" >&2
  run "$@"
  rc=$?
fi
exit "$rc"
