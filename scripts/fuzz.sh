#!/usr/bin/env bash
# Runs each libFuzzer target (tests/fuzz) for SECONDS (default 60) on its
# seed corpus, in the sanitizer build. A crash, hang, leak or sanitizer
# report fails the run (the mutation seed is fixed, KILN_FUZZ_SEED, so CI
# repeats the run it saw green); the input that caused it is left in
# build-san/fuzz/artifacts/ (replay: build-san/bin/TARGET FILE).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz-program fuzz-npy fuzz-capi fuzz-cache-entry fuzz-tune-file)
scripts/build-san.sh "${targets[@]}"
source scripts/sanitizer-env.sh
# No disk kernel cache: each input compiles, as the last one did.
export KILN_CACHE_DIR=
mkdir -p build-san/fuzz/artifacts
failed=()
for t in "${targets[@]}"; do
  name="${t#fuzz-}"
  # New inputs go to a scratch corpus; the repo's seeds stay as they are.
  work="build-san/fuzz/corpus/$name"
  mkdir -p "$work"
  dict=()
  [ -f "tests/fuzz/$name.dict" ] && dict=(-dict="tests/fuzz/$name.dict")
  echo "== $t: ${seconds}s"
  build-san/bin/"$t" "$work" "tests/fuzz/corpus/$name" "${dict[@]}" \
    -seed="${KILN_FUZZ_SEED:-1}" -max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 -max_len=4096 \
    -print_final_stats=1 -artifact_prefix=build-san/fuzz/artifacts/"$name"- \
    || failed+=("$t")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]} (inputs in build-san/fuzz/artifacts/; replay: build-san/bin/TARGET FILE)"
  ls -l build-san/fuzz/artifacts/
  exit 1
fi
echo "fuzz: passed (${targets[*]})"
