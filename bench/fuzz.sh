#!/bin/sh
# The long fuzz run: 10^6 inputs for each parser (KIF reader and UTF-8 check, match
# messages, PGN reader, the validator's token soups; `ggp web`'s API: bench/fuzz_web.sh), every Unicode blank, control bytes, bytes that are not UTF-8 and
# nesting up to 2,000 deep (strategies in crates/ggp-gdl/src/kif/mod.rs, `fuzz`). Passes if nothing panics.
# Usage: bench/fuzz.sh [CASES]   (default 1000000; the tests run proptest's default 256)
set -e
cd "$(dirname "$0")/.."
cases="${1:-1000000}"
for t in kif::tests::never_panics_on_any_unicode kif::tests::decode_never_panics \
         protocol::message::tests::never_panics_on_any_unicode chess::pgn::tests::never_panics \
         gdl::validate::tests::token_soup_with_any_blank_and_depth_never_panics \
         gdl::validate::tests::unicode_sheets_never_panic; do
    echo "== $t: $cases inputs"
    /usr/bin/time -f "   %e s, %M KiB" env PROPTEST_CASES="$cases" \
        cargo test --lib -q -- --exact "$t"
done
