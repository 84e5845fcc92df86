# Sourced by the sanitizer scripts: how ASan, LSan and UBSan report. Any
# report fails the process (UBSan aborts, build flag -fno-sanitize-recover);
# the suppressions cover third-party code only (tests/sanitizers/*.supp say why).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-22/bin/llvm-symbolizer
export ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1"
export LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$root/tests/sanitizers/ubsan.supp"
