#!/bin/sh
# ggp-base's PlayerTester cases (issue 27; bench/player-tester/cases.tsv): each case's position
# is posed as a game of its own (`ggp think --state`: the sheet's `init` rules replaced by the
# position's facts, as PlayerTester rewrites the game), the player gets the case's start clock
# and is asked for one move with its play clock, each less the second `ggp serve` keeps for the
# network; a case passes when the move is one of the case's good moves (spaces aside). One
# line a case, then the score.
#
#   sh bench/player-tester.sh [PATTERN]    PATTERN: an extended regular expression a case's
#                                          game name must match (all cases without it)
#
# Environment (all optional): GGP=target/release/ggp PLAYER=auto START=15 PLAY=5 MARGIN=1
# CPU=1 (the core `ggp think` is pinned to) SEED=0 BASE=../shared/games/base.
set -uf
GGP=${GGP:-target/release/ggp}
BASE=${BASE:-../shared/games/base}
CASES=$(dirname "$0")/player-tester/cases.tsv
PATTERN=${1:-.}
start=$(awk -v s="${START:-15}" -v m="${MARGIN:-1}" 'BEGIN { print s - m }')
play=$(awk -v s="${PLAY:-5}" -v m="${MARGIN:-1}" 'BEGIN { print s - m }')
tab=$(printf '\t')
passed=0
total=0
# Spaces inside a term's parentheses do not matter: "( drop 4 )" is "(drop 4)".
squeeze() { printf '%s' "$1" | sed -e 's/( */(/g' -e 's/ *)/)/g' -e 's/  */ /g'; }
while IFS="$tab" read -r suite game role state good; do
    case "$suite" in '#'* | '') continue ;; esac
    echo "$game" | grep -Eq "$PATTERN" || continue
    total=$((total + 1))
    out=$(taskset -c "${CPU:-1}" "$GGP" think "$BASE/$game.kif" --state "$state" \
        --role "$role" --player "${PLAYER:-auto}" --start-seconds "$start" \
        --seconds "$play" --seed "${SEED:-0}" 2>&1 | grep ': move ' | tail -n 1)
    move=$(squeeze "$(printf '%s' "$out" | sed -n 's/.*: move \(.*\) value .*/\1/p')")
    verdict=FAIL
    old_ifs=$IFS
    IFS=';'
    for m in $good; do
        if [ "$(squeeze "$(echo "$m" | sed -e 's/^ *//' -e 's/ *$//')")" = "$move" ]; then
            verdict=pass
        fi
    done
    IFS=$old_ifs
    [ "$verdict" = pass ] && passed=$((passed + 1))
    printf '%s %s %s role %s: %s (good: %s) [%s]\n' "$verdict" "$suite" "$game" "$role" \
        "${move:-no move}" "$(squeeze "$good")" "$out"
done < "$CASES"
echo "passed $passed of $total"
