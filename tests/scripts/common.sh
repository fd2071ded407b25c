# Shared by the script tests: paths from ctest's environment, a tiny job
# configuration over the fixture dataset, and JSON field extraction.
set -euo pipefail
: "${MSD_BUILD:?run through ctest}" "${MSD_SOURCE:?run through ctest}" "${MSD_MPIEXEC:?run through ctest}"
MSD_RUN="$MSD_BUILD/app/msd-run"
DATA="$MSD_BUILD/testdata/tiny"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# write_tiny_config FILE [extra INI lines...]
write_tiny_config() {
  local file=$1
  shift
  cat >"$file" <<INI
[job]
steps = 8
global_batch = 16
seq_len = 512
micro_batches = 2
seed = 5

[topology]
dp = 2
tp = 1
loaders = 2

[mix]
sources = web, books, images, corpus
schedule = linear

[source.web]
format = jsonl
path = $DATA/web/*.jsonl
weight = 0:0.6, 8:0.2

[source.books]
format = jsonl
path = $DATA/books/*.jsonl
weight = 0:0.1, 8:0.4

[source.images]
format = wds
path = $DATA/images/*.tar
weight = 0.2

[source.corpus]
format = indexed
path = $DATA/corpus/*.idx
weight = 0.1

[tokenizer]
vocab = $DATA/vocab.tiktoken

[image]
max_side = 64
patch = 16

[loader]
window_mb = 8

[emulator]
time_scale = 0.3

[output]
progress_every = 0
log_level = warn
INI
  for line in "$@"; do echo "$line" >>"$file"; done
}

# run_job CONFIG [msd-run args...]: launches the right number of ranks.
run_job() {
  local config=$1
  shift
  local n
  n=$("$MSD_RUN" --config "$config" --print-world-size "$@")
  timeout "${TIMEOUT:-120}" $MSD_MPIEXEC -n "$n" "$MSD_RUN" --config "$config" "$@"
}

# run_reference CONFIG SUMMARY [msd-run options]: the clean run a test
# compares with; if it fails, the tail of its output says why.
run_reference() {
  local config=$1 summary=$2
  shift 2
  run_job "$config" "$@" --summary-json "$summary" >"$summary.out" 2>&1 ||
    { echo "FAIL: the clean reference run failed"; grep -v "bad sample" "$summary.out" | tail -20; exit 1; }
}

# json_field FILE KEY: a top-level string or number field. A field that is
# missing or empty fails the test (it runs in $(...), so it signals the test's
# shell): two absent digests must never compare equal.
trap 'echo "FAIL: a summary field is missing or empty (json_field above)" >&2; exit 1' USR1
json_field() {
  local value
  value=$(grep -so "\"$2\":\"\?[^,\"}]*" "$1" | head -1 | sed 's/.*:"\?//')
  if [ -z "$value" ]; then
    echo "json_field: no value for '$2' in $1" >&2
    kill -USR1 $$
    return 1
  fi
  echo "$value"
}

# wait_until SECONDS WHAT COMMAND...: runs COMMAND every 0.05 s until it
# succeeds. When SECONDS pass first the test fails, naming WHAT: a polling
# loop never falls through to what comes after it.
wait_until() {
  local seconds=$1 what=$2 deadline
  shift 2
  deadline=$(($(date +%s%N) + seconds * 1000000000))
  until "$@"; do
    [ "$(date +%s%N)" -lt "$deadline" ] || { echo "FAIL: waited ${seconds}s for $what" >&2; exit 1; }
    sleep 0.05
  done
}

# found_rank_pid PATTERN RANK: sets pid to rank_pid's answer; true if found.
found_rank_pid() {
  pid=$(rank_pid "$1" "$2")
  [ -n "$pid" ]
}

# rank_pid PATTERN RANK: the pid of the msd-run (or Python) process of world
# rank RANK whose command line contains PATTERN (e.g. this test's $WORK);
# empty if none.
rank_pid() {
  local pid
  for pid in $(pgrep -f -- "$1"); do
    case "$(cat /proc/$pid/comm 2>/dev/null)" in msd-run | python3) ;; *) continue ;; esac
    if { tr '\0' '\n' </proc/$pid/environ; } 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
      echo "$pid"
      return
    fi
  done
}

# now_s: seconds since the epoch, with fractions.
now_s() { date +%s.%N; }

# write_bad_source_config FILE: a tiny job whose one source holds no good
# sample (every line is invalid JSON): the planner must end it with a
# DataError, exit status 4 (docs/errors.md), which is never requeued.
write_bad_source_config() {
  local file=$1 dir
  dir=$(dirname "$file")/bad-source
  mkdir -p "$dir"
  for i in $(seq 12); do echo "not json, line $i"; done >"$dir/bad.jsonl"
  write_tiny_config "$file"
  sed -i -e "s/^sources = .*/sources = web/" -e "s/^schedule = .*/schedule = constant/" \
    -e "s/^weight = 0:0.6, 8:0.2/weight = 1/" -e "s|^path = .*/web/\*.jsonl|path = $dir/*.jsonl|" \
    -e "/^\[source.images\]/,/^$/d" -e "/^\[source.books\]/,/^$/d" -e "/^\[source.corpus\]/,/^$/d" "$file"
}
