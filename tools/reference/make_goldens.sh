#!/usr/bin/env bash
# Regenerates the tokenizer test data under tests/data/tokenizer/:
#   small.tiktoken  a 1024-token vocabulary msd-train-bpe learns from corpus.txt
#                   (only with --retrain: the goldens depend on it)
#   golden.jsonl    the reference's ids for the cases in make_goldens.mjs
# Usage: tools/reference/make_goldens.sh [--retrain BUILD_DIR]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
data="$root/tests/data/tokenizer"
if [ "${1:-}" = "--retrain" ]; then
  build="${2:?usage: make_goldens.sh --retrain BUILD_DIR}"
  "$build/app/msd-train-bpe" --corpus "$data/corpus.txt" --vocab-size 1024 --pattern cl100k \
    --out "$data/small.tiktoken"
fi
"$root/tools/reference/install.sh"
node "$root/tools/reference/make_goldens.mjs"
