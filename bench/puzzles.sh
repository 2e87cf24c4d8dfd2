#!/bin/sh
# Every single-player sheet of ../shared/games/base (found by its role count: one LEGAL line
# per step in its reference trace), played by `auto` with the puzzle search off (the old
# player) and on, same clocks, two matches at a time, each under nice.
# Usage: sh bench/puzzles.sh OUT [STARTCLOCK] [PLAYCLOCK] [GGP]
# Writes OUT/SHEET-old.log, OUT/SHEET-new.log (the match's log lines and result) and
# OUT/table.md: sheet, goal before, goal after, seconds into the match when the puzzle
# search found its solution.
set -u
OUT=${1:?usage: sh bench/puzzles.sh OUT [STARTCLOCK] [PLAYCLOCK] [GGP]}
START=${2:-10}
PLAY=${3:-1}
GGP=${4:-target/release/ggp}
BASE=../shared/games/base
TRACES=../shared/games/traces
mkdir -p "$OUT"
: > "$OUT/jobs"
for t in "$TRACES"/*.trace; do
    roles=$(awk '/^STEP 0/{s=1;next} s&&/^LEGAL/{c++} s&&/^(DOES|TERMINAL)/{print c; exit}' "$t")
    [ "$roles" = 1 ] || continue
    g=$(basename "$t" .trace)
    role=$(awk '/^LEGAL/{print $2; exit}' "$t")
    echo "$g old auto:puzzle=off $role" >> "$OUT/jobs"
    echo "$g new auto $role" >> "$OUT/jobs"
done
export OUT START PLAY GGP BASE
xargs -P 2 -L 1 sh -c '
    log="$OUT/$0-$1.log"
    [ -s "$log" ] && grep -q "^steps:" "$log" && exit 0
    timeout 1800 nice -n 19 "$GGP" match "$BASE/$0.kif" --player "$3=builtin:$2" \
        --startclock "$START" --playclock "$PLAY" --seed 1 --out "$OUT/records" > "$log" 2>&1
    echo "exit $?" >> "$log"
' < "$OUT/jobs"
{
    echo "| sheet | goal before (puzzle=off) | goal after (puzzle on) | solution found at |"
    echo "|---|---|---|---|"
    for g in $(awk '{print $1}' "$OUT/jobs" | uniq); do
        before=$(sed -n 's/.*(auto): goal \([0-9]*\).*/\1/p' "$OUT/$g-old.log" | head -1)
        after=$(sed -n 's/.*(auto): goal \([0-9]*\).*/\1/p' "$OUT/$g-new.log" | head -1)
        found=$(sed -n 's/.*puzzle: solved.*(\([0-9.]*\) s into the match.*/\1 s/p' "$OUT/$g-new.log" | head -1)
        [ -n "$before" ] || before="failed: $(grep -m1 -E '^Error|ERROR|panicked' "$OUT/$g-old.log" | cut -c1-80)"
        [ -n "$after" ] || after="failed: $(grep -m1 -E '^Error|ERROR|panicked' "$OUT/$g-new.log" | cut -c1-80)"
        echo "| $g | $before | $after | ${found:-not found} |"
    done
} > "$OUT/table.md"
cat "$OUT/table.md"
