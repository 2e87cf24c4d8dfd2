#!/bin/sh
# The long fuzz run of `ggp web`'s endpoints (issue 13): 10^6 mutated requests (all of
# Unicode's whitespace, control bytes, invalid UTF-8, deep nesting) answered in process,
# none may panic and every answer must be JSON. `cargo test` runs a short version.
# Usage: bench/fuzz_web.sh [INPUTS]   (default 1000000)
set -e
cd "$(dirname "$0")/.."
GGP_FUZZ_INPUTS="${1:-1000000}" exec cargo test --release --lib web::fuzz -- --nocapture
