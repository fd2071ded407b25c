# Shared by tools/demo.sh and tools/train-demo.sh (sourced; needs $root).

# demo_build NAME BUILD_DIR CONFIGURE TARGETS...: builds the targets quietly
# (Release, no tests; CONFIGURE=0 uses BUILD_DIR as it is configured); on
# failure shows the log's tail and exits.
demo_build() {
  local name=$1 build=$2 configure=$3
  shift 3
  echo "$name: building in $build"
  mkdir -p "$build"
  if ! { { ((configure == 0)) || cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMSD_BUILD_TESTS=OFF; } &&
         cmake --build "$build" -j"$(nproc)" --target "$@"; } >"$build/$name-build.log" 2>&1; then
    tail -n 40 "$build/$name-build.log"
    echo "$name: the build failed; the whole log is $build/$name-build.log" >&2
    exit 1
  fi
}

# demo_data NAME BUILD_DIR: makes the embedded default dataset in data/demo
# unless it is there.
demo_data() {
  if [ ! -f "$root/data/demo/MANIFEST" ]; then
    echo "$1: generating the default dataset in data/demo"
    "$2/app/msd-datagen" --out "$root/data/demo" --scale demo --seed 1
  fi
}
