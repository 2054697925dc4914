#!/usr/bin/env bash
# Fuzzing of the native modules (docs/fuzzing.md).
#
#   scripts/fuzz.sh TARGET SECONDS   build TARGET under ASan + UBSan with libFuzzer and fuzz it
#   scripts/fuzz.sh all SECONDS      every target in turn, SECONDS each (what CI runs)
#   scripts/fuzz.sh build [TARGET…]  only build the fuzzing binaries
#   scripts/fuzz.sh replay [TARGET…] build each target without libFuzzer or sanitizers (cc, as the
#                                    modules are built) and run it over the seeds in fuzz/corpus/TARGET
#                                    and fuzz/regressions/TARGET; exit 1 when an input fails
#                                    (FUZZ_REPLAY_FOUND=1: fuzz/corpus/TARGET/found too)
#                                    (FUZZ_VALGRIND=1: under valgrind, leaks and bad accesses fail too)
#   scripts/fuzz.sh seeds            regenerate fuzz/corpus/*/gen-* (fuzz/seedgen.c)
#   scripts/fuzz.sh sanitize PKI_DIR the modules' leak-check drivers under ASan + UBSan + LeakSanitizer
#   scripts/fuzz.sh coverage TARGET  line coverage of the modules' sources by the corpus (llvm-cov)
#   scripts/fuzz.sh afl TARGET       build TARGET with afl-clang-fast (AFL++) into build/fuzz/afl/
#   scripts/fuzz.sh list             the target names
#
# Environment: FUZZ_CC (default clang), CC (default cc, for replay), SBILAB_BUILD_DIR (default
# build). New inputs the fuzzer finds go to BUILD/fuzz/work/TARGET;
# crashes, leaks and timeouts to BUILD/fuzz/crashes/TARGET/ (copy them into fuzz/regressions/TARGET/).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# ---- sources: the one place that names the modules' C files ----
# the I/O loop both modules link (named once: seedgen links both modules' sources)
LOOP_SRC="transports/native/sbloop.c"
H2_SRC="transports/h2/native/sbh2.c transports/h2/native/sbh2_server.c transports/h2/native/sbh2_tls.c
        transports/h2/native/sbh2_loop.c transports/h2/native/sbh2_client_loop.c"
H3_SRC="transports/h3/native/sbh3_common.c transports/h3/native/sbh3_conn.c transports/h3/native/sbh3_client.c
        transports/h3/native/sbh3_server.c transports/h3/native/sbh3_udp.c transports/h3/native/sbh3_tls.c
        transports/native/sbhttp3.c"
LOAD_SRC="load/native/sbl_hist.c"
# the load targets include these two whole (they reach the files' static functions)
LOAD_C="load/native/sbl_load.c"
H2_LOAD_C="load/native/sbl_h2.c"
DEFS=(-DSBL_LOAD_C="\"$ROOT/$LOAD_C\"" -DSBH2_LOAD_C="\"$ROOT/$H2_LOAD_C\"")
H2_LIBS="-lnghttp2 -lgnutls"
H3_LIBS="-lngtcp2_crypto_gnutls -lngtcp2 -lnghttp3 -lgnutls"
# sbh3's own random bytes (connection ids, secrets) come from a seeded generator in the h3 targets,
# so that an input replays the same way; GnuTLS's own randomness is untouched.
H3_WRAP="-Wl,--wrap=gnutls_rnd"

TARGETS="h2_server h2_client h3_server h3_client sbwire load_plan load_h2"

# Prints "sources|libs" of a target.
target_spec() {
  case "$1" in
  h2_server | h2_client) echo "fuzz/$1.c $H2_SRC $LOOP_SRC|$H2_LIBS" ;;
  h3_server | h3_client) echo "fuzz/$1.c fuzz/h3_common.c $H3_SRC $LOOP_SRC|$H3_LIBS $H3_WRAP" ;;
  sbwire) echo "fuzz/sbwire.c $H3_SRC $LOOP_SRC|$H3_LIBS" ;;
  load_plan) echo "fuzz/load_plan.c $LOAD_SRC|-lpthread -lm" ;;
  load_h2) echo "fuzz/load_h2.c $LOAD_SRC $H2_SRC $LOOP_SRC|$H2_LIBS -lpthread -lm" ;;
  *) return 1 ;;
  esac
}

BUILD="${SBILAB_BUILD_DIR:-$ROOT/build}/fuzz"
FUZZ_CC="${FUZZ_CC:-clang}"
SAN_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"

die() {
  echo "error: $*" >&2
  exit 1
}

need_clang() {
  command -v "$FUZZ_CC" >/dev/null || die "$FUZZ_CC not found: run apt-get install -y clang libclang-rt-14-dev"
  echo 'int LLVMFuzzerTestOneInput(const char *d, long n) { (void)d; (void)n; return 0; }' >"$BUILD/.probe.c"
  "$FUZZ_CC" -fsanitize=fuzzer,address -o "$BUILD/.probe" "$BUILD/.probe.c" 2>/dev/null ||
    die "$FUZZ_CC cannot link libFuzzer: run apt-get install -y libclang-rt-14-dev"
}

# Builds the libFuzzer + sanitizer binary of a target.
build_fuzz() {
  local t=$1 spec src libs
  spec=$(target_spec "$t") || die "unknown target $t (scripts/fuzz.sh list)"
  src=${spec%%|*}
  libs=${spec#*|}
  mkdir -p "$BUILD"
  # shellcheck disable=SC2086
  "$FUZZ_CC" -g -O1 -fsanitize=fuzzer $SAN_FLAGS -Wall -Wextra -Wno-unused-parameter \
    "${DEFS[@]}" -o "$BUILD/$t" $src $libs
}

# Builds the plain binary of a target (fuzz/driver.c as main), as the modules are built.
build_replay() {
  local t=$1 spec src libs
  spec=$(target_spec "$t") || die "unknown target $t (scripts/fuzz.sh list)"
  src=${spec%%|*}
  libs=${spec#*|}
  mkdir -p "$BUILD"
  # shellcheck disable=SC2086
  "${CC:-cc}" -g -O2 -Wall -Wextra -Wno-unused-parameter "${DEFS[@]}" -o "$BUILD/$t.replay" fuzz/driver.c $src $libs
}

# Fuzzes one target for $2 seconds; prints one summary line.
run_fuzz() {
  local t=$1 secs=$2
  local work="$BUILD/work/$t" crashes="$BUILD/crashes/$t" log="$BUILD/$t.log"
  mkdir -p "$work" "$crashes" "fuzz/corpus/$t" "fuzz/regressions/$t"
  local dict=()
  [ -f "fuzz/$t.dict" ] && dict=("-dict=fuzz/$t.dict")
  set +e
  ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}" \
    UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
    "$BUILD/$t" "$work" "fuzz/corpus/$t" "fuzz/regressions/$t" "${dict[@]}" \
    -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$crashes/" >"$log" 2>&1
  local rc=$?
  set -e
  local runs rate edges
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{s += $2} END {print s + 0}')
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | awk '{s += $2} END {print s + 0}')
  edges=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{print $2}')
  printf '%-10s %6ss  runs %9s  exec/s %6s  edges %6s  %s\n' "$t" "$secs" "$runs" "$rate" "${edges:-?}" \
    "$([ $rc -eq 0 ] && echo ok || echo "FOUND (exit $rc): see $log and $crashes/")"
  return $rc
}

cmd=${1:-}
case "$cmd" in
list) echo "$TARGETS" | tr ' ' '\n' ;;
build)
  shift
  mkdir -p "$BUILD"
  need_clang
  for t in ${*:-$TARGETS}; do build_fuzz "$t"; done
  ;;
replay)
  shift
  rc=0
  for t in ${*:-$TARGETS}; do
    build_replay "$t"
    # the seeds and every regression; the fuzzer's own finds (corpus/TARGET/found) with FUZZ_REPLAY_FOUND=1
    dirs=()
    for f in "fuzz/corpus/$t"/* "fuzz/regressions/$t"/*; do [ -f "$f" ] && dirs+=("$f"); done
    [ "${FUZZ_REPLAY_FOUND:-0}" = 1 ] && [ -d "fuzz/corpus/$t/found" ] && dirs+=("fuzz/corpus/$t/found")
    [ ${#dirs[@]} -gt 0 ] || continue
    wrap=()
    [ "${FUZZ_VALGRIND:-0}" = 1 ] && wrap=(valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite)
    if ! "${wrap[@]}" "$BUILD/$t.replay" "${dirs[@]}" 2>"$BUILD/$t.replay.log"; then
      echo "$t: an input failed (see $BUILD/$t.replay.log)" >&2
      rc=1
    fi
  done
  exit $rc
  ;;
seeds)
  # the generated seeds: sbilab's own client and server traffic in each target's input format
  mkdir -p "$BUILD"
  # shellcheck disable=SC2086
  "${CC:-cc}" -g -O1 -o "$BUILD/seedgen" fuzz/seedgen.c fuzz/h3_common.c $H2_SRC $H3_SRC $LOOP_SRC $H2_LIBS $H3_LIBS $H3_WRAP
  "$BUILD/seedgen" fuzz/corpus
  ;;
sanitize)
  # the modules' own leak-check drivers built under ASan + UBSan (LeakSanitizer on), with the PEM
  # files of writeDevPki (transports/pki.ts) in PKI_DIR; their output goes to stdout
  pki=${2:?usage: scripts/fuzz.sh sanitize PKI_DIR}
  mkdir -p "$BUILD/san"
  need_clang
  # shellcheck disable=SC2086
  "$FUZZ_CC" -g -O1 $SAN_FLAGS -o "$BUILD/san/h2_leakcheck" transports/h2/native/leakcheck.c $H2_SRC $LOOP_SRC $H2_LIBS
  # shellcheck disable=SC2086
  "$FUZZ_CC" -g -O1 $SAN_FLAGS -o "$BUILD/san/h3_leakcheck" transports/h3/native/leakcheck.c $H3_SRC $LOOP_SRC $H3_LIBS
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
  "$BUILD/san/h2_leakcheck" "$pki/ca.pem" "$pki/server.pem" "$pki/server-key.pem" "$pki/client.pem" \
    "$pki/client-key.pem"
  "$BUILD/san/h3_leakcheck" "$pki/ca.pem" "$pki/server.pem" "$pki/server-key.pem"
  ;;
coverage)
  # line coverage of the modules' sources reached by a target's corpus (and its work folder)
  t=${2:?usage: scripts/fuzz.sh coverage TARGET}
  spec=$(target_spec "$t") || die "unknown target $t"
  mkdir -p "$BUILD/cov"
  # shellcheck disable=SC2086
  "$FUZZ_CC" -g -O0 -fprofile-instr-generate -fcoverage-mapping "${DEFS[@]}" -o "$BUILD/cov/$t" fuzz/driver.c \
    ${spec%%|*} ${spec#*|}
  dirs=()
  for d in "fuzz/corpus/$t" "fuzz/regressions/$t" "$BUILD/work/$t"; do [ -d "$d" ] && dirs+=("$d"); done
  LLVM_PROFILE_FILE="$BUILD/cov/$t.profraw" "$BUILD/cov/$t" "${dirs[@]}" 2>/dev/null
  llvm-profdata merge -sparse -o "$BUILD/cov/$t.profdata" "$BUILD/cov/$t.profraw"
  # shellcheck disable=SC2086
  llvm-cov report "$BUILD/cov/$t" -instr-profile="$BUILD/cov/$t.profdata" $(echo "${spec%%|*}" | tr ' ' '\n' | grep -v '^fuzz/')
  ;;
afl)
  t=${2:?usage: scripts/fuzz.sh afl TARGET}
  spec=$(target_spec "$t") || die "unknown target $t"
  command -v afl-clang-fast >/dev/null || die "afl-clang-fast not found: run apt-get install -y afl++"
  mkdir -p "$BUILD/afl"
  # shellcheck disable=SC2086
  afl-clang-fast -g -O1 "${DEFS[@]}" -o "$BUILD/afl/$t" fuzz/driver.c ${spec%%|*} ${spec#*|}
  echo "afl-fuzz -i fuzz/corpus/$t -o $BUILD/afl/$t.out -- $BUILD/afl/$t @@"
  ;;
all)
  secs=${2:?usage: scripts/fuzz.sh all SECONDS}
  mkdir -p "$BUILD"
  need_clang
  rc=0
  for t in $TARGETS; do build_fuzz "$t"; done
  for t in $TARGETS; do run_fuzz "$t" "$secs" || rc=1; done
  exit $rc
  ;;
"" | -h | --help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//' ;;
*)
  secs=${2:?usage: scripts/fuzz.sh TARGET SECONDS}
  target_spec "$cmd" >/dev/null || die "unknown target $cmd (scripts/fuzz.sh list)"
  mkdir -p "$BUILD"
  need_clang
  build_fuzz "$cmd"
  run_fuzz "$cmd" "$secs"
  ;;
esac
