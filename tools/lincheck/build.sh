#!/usr/bin/env bash
# Build the lincheck binary: tools/lincheck/build.sh [OUTPUT_DIR]
# OUTPUT_DIR defaults to tools/lincheck/bin; a relative path is taken from the
# current directory. Prints the path of the built binary.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-$here/bin}"

if ! command -v go >/dev/null 2>&1; then
  echo "build.sh: error: 'go' not found in PATH; lincheck needs Go >= 1.19 (https://go.dev/doc/install, or apt-get install golang-go)" >&2
  exit 1
fi

mkdir -p "$out"
out="$(cd "$out" && pwd)"
(cd "$here" && go build -buildvcs=false -o "$out/lincheck" .)
echo "$out/lincheck"
