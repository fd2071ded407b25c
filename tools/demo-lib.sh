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

# demo_data NAME BUILD_DIR CONFIG: makes the embedded default dataset in
# data/demo beside the configuration's folder (the configs name
# ../data/demo/...) unless it is there.
demo_data() {
  local data
  data="$(cd "$(dirname "$3")/.." && pwd)/data/demo"
  if [ ! -f "$data/MANIFEST" ]; then
    echo "$1: generating the default dataset in $data"
    "$2/app/msd-datagen" --out "$data" --scale demo --seed 1
  fi
}

# demo_args "$@": sets build, configure and config from the scripts' own
# options (--build DIR: an existing build, not rebuilt; --config FILE) and
# leaves the rest, for msd-run, in args.
demo_args() {
  args=()
  while (($#)); do
    case $1 in
      --build) build=$(cd "$2" && pwd); configure=0; shift 2 ;;
      --config) config=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
      *) args+=("$1"); shift ;;
    esac
  done
}

# demo_run NAME BUILD_DIR OUT_DIR CONFIG [msd-run args...]: runs the job with
# its per-step metrics in OUT_DIR/metrics.jsonl (unless the arguments name a
# metrics file of their own) and draws them into OUT_DIR/metrics.png.
demo_run() {
  local name=$1 build=$2 out=$3 config=$4
  shift 4
  local metrics="$out/metrics.jsonl" arg
  for arg in "$@"; do
    case $arg in --metrics | --metrics=* | --output.metrics | --output.metrics=*) metrics="" ;; esac
  done
  mkdir -p "$out"
  local extra=()
  if [ -n "$metrics" ]; then
    rm -f "$metrics"
    extra=(--metrics "$metrics")
  fi
  "$root/tools/mpirun.sh" "$build" --config "$config" "${extra[@]}" "$@"
  if [ -n "$metrics" ]; then
    "$root/tools/plot-metrics" --title "msd demo: configs/$(basename "$config")" "$metrics" "$out/metrics.png"
    echo "$name: per-step metrics in $metrics, drawn in $out/metrics.png"
  fi
}
