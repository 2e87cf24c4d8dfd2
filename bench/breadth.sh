#!/bin/sh
# The breadth run (issue 27): ggp against Sancho 1.61c on games nobody tuned on, every class.
#
#   sh bench/breadth.sh select               writes bench/breadth/classes.txt, set-a.txt, set-b.txt
#   sh bench/breadth.sh select-c             writes bench/breadth/set-c.txt (issue 55's held-back set)
#   sh bench/breadth.sh run SET OUT          plays SET (a set file) into the folder OUT
#   sh bench/breadth.sh report SET OUT       prints the tables of SET's records in OUT
#
# Selection (never by results): every sheet of ../shared/games/base, in alphabetical order, is
# classified by `ggp playout SHEET --count 3 --seed 1 --max-steps 100` (the trace format: one
# LEGAL line per role and step, `random` left out): ROLES is the number of roles, and it is
# simultaneous when, at some step of those three random playouts, two or more roles have more
# than one legal move. Sheets whose three playouts do not finish within 20 s (on the loaded
# 2-core machine the lists were made on: amazons and the like are left out) or that fail (no load, or a role without a legal move) are left out, and so are sheets with
# one role or more than four. The classes:
#   turn   two roles, not simultaneous        (14 per set)
#   sim    two roles, simultaneous            (5 per set)
#   multi  three or four roles                (5 per set)
# In each class's alphabetical list of L sheets, with T per set and n = floor(L / T), set A is
# the sheets at positions 0, n, 2n, ... and set B those at n/2, n/2 + n, ... (n/2 rounded
# down), T of each: two disjoint sets of 24 games, B for confirming a change tuned on A.
# Set files hold `CLASS SHEET` lines.
#
# Set C (issue 55), held back for the final measurement and never tuned on, is drawn by the
# same rule from the sheets no strength work has used: in each class's alphabetical list of
# the L sheets of classes.txt that are in neither set A nor set B and name no match record
# committed under docs/experiments/ or matches/ (GAME.*.json), with T per set and
# m = floor(L / T), the sheets at positions floor(m/2), floor(m/2) + m, ...: 20 turn, 6 sim,
# 6 multi (32 games; the multi class has only 7 such sheets). Written once (2026-12-07) and
# committed: rerunning it after more records are committed would draw another set.
#
# Sancho's errors (docs/experiments/sancho-errors.md): on some sheets it cannot play at 60/5 on
# one core in any configuration (an exception at START, then `busy`; a propnet that takes longer
# to build than the start clock; a fixed internal limit). Those matches count in the full
# figure and not in the clean one; every table line gives both (docs/tournaments.md).
#
# Run: one `ggp tournament` over the set's games, `ggp=$GGP_PLAYER` against `sancho=$SANCHO`,
# seats rotating; games of three or four roles get `builtin:random` in the seats left over
# (`--filler`, left out of the tables: a win is ggp's goal above Sancho's). Then it prints the
# tables of each class (`ggp tournament --report` on the class's games) and over all games.
# Rerun the same command to resume. Environment (all optional):
#   START=60 PLAY=5      the clocks
#   MATCHES=2            matches per game (seats rotate from one to the next)
#   GGP=target/release/ggp
#   GGP_PLAYER=builtin:auto   or HOST:PORT[,HOST:PORT...] of `ggp serve` players
#   SANCHO=              HOST:PORT[,HOST:PORT...] of Sancho players (a pool spreads the run
#                        over machines); empty: one Sancho is started here on port
#                        SANCHO_PORT=9230, pinned to core 0 (SANCHO_THREADS=1
#                        SANCHO_SAFETY_MS=1000, JAVA_TOOL_OPTIONS=-Xss64m, SANCHO_XMX=8g), a fresh
#                        one for each match, its learnt data kept in OUT/sancho-run
#   SANCHO_RUN=../shared/sparring/sancho/run
#   GGP_CPUS=1           the core `ggp tournament` (with its built-in players) is pinned to
#   CORES=2              --cores of the tournament: 2 per match (one core each), so raise it
#                        to 2 × the pool size when both players are pools
set -u
BASE=${BASE:-../shared/games/base}
GGP=${GGP:-target/release/ggp}
DIR=$(dirname "$0")/breadth

select_sets() {
    mkdir -p "$DIR"
    : > "$DIR/classes.txt"
    for sheet in "$BASE"/*.kif; do
        name=$(basename "$sheet" .kif)
        line="0 0"
        if timeout 20 "$GGP" playout "$sheet" --count 3 --seed 1 --max-steps 100 \
            --engine auto > "$DIR/.playout" 2> /dev/null; then
            line=$(awk -f "$DIR/classify.awk" "$DIR/.playout")
        fi
        set -- $line
        if [ "$1" = 0 ]; then class=failed
        elif [ "$1" = 2 ] && [ "$2" = 0 ]; then class=turn
        elif [ "$1" = 2 ]; then class=sim
        elif [ "$1" -ge 3 ] && [ "$1" -le 4 ]; then class=multi
        else class=other; fi
        echo "$name $1 $2 $class" >> "$DIR/classes.txt"
    done
    rm -f "$DIR/.playout"
    : > "$DIR/set-a.txt"
    : > "$DIR/set-b.txt"
    for spec in turn:14 sim:5 multi:5; do
        class=${spec%:*}
        want=${spec#*:}
        awk -v c="$class" -v t="$want" -v a="$DIR/set-a.txt" -v b="$DIR/set-b.txt" '
            $4 == c { s[n++] = $1 }
            END {
                step = int(n / t)
                if (step < 2) { print c ": only " n " sheets" > "/dev/stderr"; exit 1 }
                for (i = 0; i < t; i++) {
                    print c, s[i * step] >> a
                    print c, s[i * step + int(step / 2)] >> b
                }
            }' "$DIR/classes.txt" || exit 1
    done
    awk '{print $4}' "$DIR/classes.txt" | sort | uniq -c
    echo "set A:"; cat "$DIR/set-a.txt"
    echo "set B:"; cat "$DIR/set-b.txt"
}

select_c() {
    here=$(dirname "$0")/..
    used=$(mktemp)
    cat "$DIR/set-a.txt" "$DIR/set-b.txt" | awk '{print $2}' > "$used"
    find "$here/docs/experiments" "$here/matches" -name '*.json' ! -name tournament.json \
        2> /dev/null | sed 's|.*/||; s|\..*||' >> "$used"
    : > "$DIR/set-c.txt"
    for spec in turn:20 sim:6 multi:6; do
        class=${spec%:*}
        want=${spec#*:}
        awk -v c="$class" -v t="$want" -v out="$DIR/set-c.txt" '
            FILENAME == ARGV[1] { used[$1] = 1; next }
            $4 == c && !($1 in used) { s[n++] = $1 }
            END {
                step = int(n / t)
                if (step < 1) { print c ": only " n " sheets" > "/dev/stderr"; exit 1 }
                for (i = 0; i < t; i++) print c, s[int(step / 2) + i * step] >> out
            }' "$used" "$DIR/classes.txt" || { rm -f "$used"; exit 1; }
    done
    rm -f "$used"
    echo "set C:"; cat "$DIR/set-c.txt"
}

# Sets `games` (the sheets of the set file $1) and `players` (the tournament's player options).
games_and_players() {
    games=$(awk -v b="$BASE" '{print b "/" $2 ".kif"}' "$1")
    players="--player ggp=${GGP_PLAYER:-builtin:auto} --player sancho=${SANCHO:-127.0.0.1:9230} --filler random=builtin:random"
}

# Whether Sancho answers an INFO.
answers() {
    curl -s -m 5 -d '(info)' "http://$SANCHO/" > /dev/null 2>&1
}

# Starts Sancho here, on $SANCHO's port, pinned to core 0, and waits until it answers (its JVM
# takes a few seconds).
start_sancho() {
    # A deep stack: Sancho's propnet builder recurses once per gate along a path, and on
    # atariGo_7x7 it overflowed the JVM's default 1 MB, which ended its player thread (it
    # answered nothing after, and every later match failed). A 4 GB heap ran out on
    # double_tictactoe_dengji, with the same end.
    JAVA_TOOL_OPTIONS="${JAVA_TOOL_OPTIONS:--Xss64m}" SANCHO_XMX=${SANCHO_XMX:-8g} \
        SANCHO_RUNDIR=${SANCHO_RUNDIR:-$OUT/sancho-run} \
        SANCHO_THREADS=1 SANCHO_CPUS=0 SANCHO_SAFETY_MS=1000 \
        "${SANCHO_RUN:-../shared/sparring/sancho/run}" "${SANCHO##*:}" >> "$OUT/sancho.out" 2>&1 &
    sancho_pid=$!
    for _ in $(seq 60); do
        answers && break
        sleep 1
    done
}

run_set() {
    SET=$1
    OUT=$2
    START=${START:-60}
    PLAY=${PLAY:-5}
    MATCHES=${MATCHES:-2}
    GGP_PLAYER=${GGP_PLAYER:-builtin:auto}
    GGP_CPUS=${GGP_CPUS:-1}
    CORES=${CORES:-2}
    SANCHO=${SANCHO:-}
    sancho_pid=
    mkdir -p "$OUT"
    local_sancho=
    if [ -z "$SANCHO" ]; then
        local_sancho=1
        SANCHO=127.0.0.1:${SANCHO_PORT:-9230}
        trap '[ -n "$sancho_pid" ] && kill "$sancho_pid"' EXIT INT TERM
    fi
    games_and_players "$SET"
    tournament() {
        # shellcheck disable=SC2086
        taskset -c "$GGP_CPUS" "$GGP" tournament $games $players --matches "$MATCHES" \
            --startclock "$START" --playclock "$PLAY" --cores "$CORES" --threads 1 \
            --out "$OUT" "$@" >> "$OUT/run.log" 2>&1
    }
    if [ -n "$local_sancho" ]; then
        # One match per Sancho, so that a game it cannot handle (9.3 GB resident on checkers,
        # every move late; with a 4 GB heap, out of memory on double_tictactoe_dengji) cannot
        # spoil the matches after it; what it learnt is kept in its run folder. A match that
        # failed is played again, a few times at most.
        planned=$(($(wc -l < "$SET") * MATCHES))
        for _ in $(seq $((planned + 6))); do
            [ -n "$sancho_pid" ] || start_sancho
            tournament --max-new 1
            status=$?
            kill "$sancho_pid" 2> /dev/null
            wait "$sancho_pid" 2> /dev/null
            sancho_pid=
            # shellcheck disable=SC2086
            finished=$("$GGP" tournament $games $players --matches "$MATCHES" --out "$OUT" \
                --report 2> /dev/null | sed -n 's/^[0-9]* matches planned, \([0-9]*\) finished.*/\1/p')
            [ "${finished:-0}" -ge "$planned" ] && break
        done
    else
        tournament
        status=$?
    fi
    echo "tournament exit $status; each match's line and the tables: $OUT/run.log"
    echo
    report_set "$SET" "$OUT"
    return $status
}

# The tables of SET's records in OUT, per class and overall: every line gives the figures over
# all matches and over the clean ones (no error of the opponent's).
report_set() {
    SET=$1
    OUT=$2
    MATCHES=${MATCHES:-2}
    games_and_players "$SET"
    for class in turn sim multi; do
        case $class in
            turn) title="two-player turn-taking" ;;
            sim) title="simultaneous moves" ;;
            multi) title="three or more roles (random players in the other seats)" ;;
        esac
        list=$(awk -v b="$BASE" -v c="$class" '$1 == c {print b "/" $2 ".kif"}' "$SET")
        [ -n "$list" ] || continue
        echo "== $title =="
        # shellcheck disable=SC2086
        "$GGP" tournament $list $players --matches "$MATCHES" --out "$OUT" --report 2> /dev/null \
            | sed -n '/^all games/,$p'
        echo
    done
    echo "== overall =="
    # shellcheck disable=SC2086
    "$GGP" tournament $games $players --matches "$MATCHES" --out "$OUT" --report 2> /dev/null \
        | sed -n '/matches planned/p; /^all games/,$p'
}

case ${1:-} in
    select) select_sets ;;
    select-c) select_c ;;
    run) run_set "${2:?usage: sh bench/breadth.sh run SET OUT}" "${3:?usage: sh bench/breadth.sh run SET OUT}" ;;
    report) report_set "${2:?usage: sh bench/breadth.sh report SET OUT}" "${3:?usage: sh bench/breadth.sh report SET OUT}" ;;
    *) sed -n '2,7p' "$0"; exit 2 ;;
esac
