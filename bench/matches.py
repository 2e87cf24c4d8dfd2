#!/usr/bin/env python3
"""Win rates, playouts per second in real play and worst move latency, from real matches.

Runs `ggp match` N times between two built-in players, alternating sides, and summarises
the records and the players' log lines. Usage:

    bench/matches.py GAME.kif PLAYER_A PLAYER_B --matches 20 --playclock 5 [--startclock 10]

Needs a release build (`cargo build --release`). Records go to a temporary directory
unless --out is given.
"""
import argparse
import re
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("game")
ap.add_argument("a")
ap.add_argument("b")
ap.add_argument("--matches", type=int, default=20)
ap.add_argument("--playclock", type=int, default=5)
ap.add_argument("--startclock", type=int, default=10)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--out")
ap.add_argument("--ggp", default="target/release/ggp")
args = ap.parse_args()

def roles(game):
    text = open(game).read()
    return [r for r in re.findall(r"\(\s*role\s+([^\s()?]+)\s*\)", text)]

rs = roles(args.game)
assert len(rs) == 2, f"two roles expected, found {rs}"
out = args.out or tempfile.mkdtemp(prefix="ggp-matches-")
score = {args.a: 0.0, args.b: 0.0}
wins = {args.a: 0, args.b: 0}
draws = 0
errors = 0
worst = {args.a: 0, args.b: 0}
rate = {args.a: [0, 0], args.b: [0, 0]}  # playouts, ms of searched moves
for i in range(args.matches):
    first, second = (args.a, args.b) if i % 2 == 0 else (args.b, args.a)
    cmd = [args.ggp, "match", args.game,
           "--player", f"{rs[0]}=builtin:{first}", "--player", f"{rs[1]}=builtin:{second}",
           "--startclock", str(args.startclock), "--playclock", str(args.playclock),
           "--threads", str(args.threads), "--out", out, "--seed", str(i)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"match {i}: exit {p.returncode}\n{p.stderr[-2000:]}", file=sys.stderr)
        continue
    goals = {}
    for line in p.stdout.splitlines():
        m = re.match(r"(\S+) \((\S+)\): goal (\d+), errors (\d+)", line)
        if m:
            goals[m.group(1)] = int(m.group(3))
            errors += int(m.group(4))
    ga, gb = goals[rs[0]], goals[rs[1]]
    name_of = {rs[0]: first, rs[1]: second}
    for role, g in goals.items():
        score[name_of[role]] += g
    if ga == gb:
        draws += 1
    else:
        wins[name_of[rs[0]] if ga > gb else name_of[rs[1]]] += 1
    for line in p.stderr.splitlines():
        m = re.search(r"step=\d+ role=(\S+) mv=.* ms=(\d+)", line)
        if m and "serve{" not in line:
            who = name_of[m.group(1)]
            worst[who] = max(worst[who], int(m.group(2)))
        m = re.search(r"serve\{name=([^}]+)\}: kind=\"PLAY\".* playouts=(\d+).* searched=true ms=(\d+)", line)
        if m and m.group(1) in rate:
            rate[m.group(1)][0] += int(m.group(2))
            rate[m.group(1)][1] += int(m.group(3))
    print(f"match {i}: {rs[0]}={first} {rs[1]}={second} goals {ga} {gb}", flush=True)

n = args.matches
print(f"game {args.game}, {n} matches, play clock {args.playclock} s, records in {out}")
for who in (args.a, args.b):
    p, ms = rate[who]
    pps = f"{1000 * p / ms:.0f} playouts/s" if ms else "no searched moves"
    print(f"{who}: wins {wins[who]}, mean goal {score[who] / n:.1f}, {pps}, "
          f"worst move {worst[who]} ms ({100 * worst[who] / (1000 * args.playclock):.0f}% of the clock)")
print(f"draws {draws}, errors {errors}")
