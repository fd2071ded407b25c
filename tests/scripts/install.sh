#!/usr/bin/env bash
# The installed package (README "Using the installed package"): this build's
# dev component installed into a scratch prefix holds include/msd/ and
# nothing of lib/, a trainer of its own CMake project (tests/install/) builds
# against it with find_package(msd) and msd::msd, and under mpirun on the
# tiny configuration its clients receive every step. Its summary must equal
# msd-run's for the same configuration (batch digest, steps, tokens), and the
# positions its clients counted in the batches must add up to those tokens.
source "$(dirname "$0")/common.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
prefix=$WORK/prefix
cmake --install "$MSD_BUILD" --prefix "$prefix" --component dev >"$WORK/install.log" 2>&1 ||
  { tail -20 "$WORK/install.log"; fail "cmake --install failed"; }

# Exactly the public headers, and no path into this checkout or its build nor
# to a library of this machine.
expected=$(cd "$MSD_SOURCE/include" && find msd -name '*.h' | sort)
installed=$(cd "$prefix/include" && find . -type f | sed 's|^\./||' | sort)
[ "$expected" = "$installed" ] || fail "installed headers differ from include/msd/: $(diff <(echo "$expected") <(echo "$installed"))"
[ -f "$prefix/lib/cmake/msd/msdConfig.cmake" ] && [ -f "$prefix/lib/cmake/msd/msdConfigVersion.cmake" ] ||
  fail "no msdConfig.cmake and version file under $prefix/lib/cmake/msd"
if grep -rn -e "$MSD_SOURCE" -e "$MSD_BUILD" "$prefix/lib/cmake/msd"; then fail "the package names the build tree (above)"; fi
# Its dependencies (HDF5, NCCL, ...) are found again by name, never linked by
# a path of this machine.
if grep -nE '(^|[";])/[^";]*\.(so|a)([.;"]|$)' "$prefix"/lib/cmake/msd/msdTargets*.cmake; then
  fail "the package links a library by its path on this machine (above)"
fi

build=$WORK/trainer
cmake -S "$MSD_SOURCE/tests/install" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$prefix" \
  >"$WORK/configure.log" 2>&1 || { tail -30 "$WORK/configure.log"; fail "the trainer's project did not configure"; }
cmake --build "$build" -j2 >"$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; fail "the trainer did not build"; }
trainer=$build/trainer

config=$WORK/job.ini
write_tiny_config "$config"
run_reference "$config" "$WORK/reference.json"
ranks=$("$trainer" --config "$config" --print-world-size)
timeout 120 $MSD_MPIEXEC -n "$ranks" "$trainer" --config "$config" --summary-json "$WORK/trainer.json" \
  >"$WORK/trainer.out" 2>&1 || { tail -20 "$WORK/trainer.out"; fail "the trainer's job failed"; }

steps=$(json_field "$WORK/reference.json" steps)
clients=$(grep -c '^trainer: client' "$WORK/trainer.out" || true)
[ "$clients" = 2 ] || { cat "$WORK/trainer.out"; fail "$clients client lines, expected 2 (dp = 2)"; }
bad=$(awk -v s="$steps" '/^trainer: client/ && ($5 != s || $9 != s)' "$WORK/trainer.out")
[ -z "$bad" ] || fail "a client did not receive (or its sink was not given) all $steps steps: $bad"
positions=$(awk '/^trainer: client/ {p += $7} END {print p}' "$WORK/trainer.out")
for field in batch_digest steps tokens; do
  want=$(json_field "$WORK/reference.json" "$field")
  got=$(json_field "$WORK/trainer.json" "$field")
  [ "$want" = "$got" ] || fail "$field: msd-run $want, the installed trainer $got"
done
tokens=$(json_field "$WORK/reference.json" tokens)
[ "$positions" = "$tokens" ] || fail "the clients counted $positions positions in their batches; msd-run's summary has $tokens tokens"
echo "install: $clients clients x $steps steps, $positions positions, batch digest $(json_field "$WORK/trainer.json" batch_digest)"
