# Usage: terminal.py BINARY SEED RUNS GAME ROLE MOVE (run by bench/reply_time.sh)
# Times the computer's reply at `medium` in `ggp play`: from typing the move to the next prompt.
# Every run uses the same seed, as the page's runs do (the server's --seed), so both sides
# time the same search.
import os, subprocess, sys, time, select
binary, game, role, move = sys.argv[1], sys.argv[4], sys.argv[5], sys.argv[6]
def once(seed):
    p = subprocess.Popen([binary, "play", f"rules/{game}.kif", "--as", role, "--vs", "medium",
                          "--pause", "0", "--seed", str(seed)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    buf = b""
    def wait_prompts(n):
        nonlocal buf
        while buf.count(f"{role}> ".encode()) < n:
            r, _, _ = select.select([p.stdout], [], [], 120)
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk: raise SystemExit("ended: " + buf[-500:].decode())
            buf += chunk
    wait_prompts(1)
    t0 = time.perf_counter()
    p.stdin.write(f"{move}\n".encode()); p.stdin.flush()
    wait_prompts(2)
    t1 = time.perf_counter()
    p.stdin.close(); p.wait()
    return t1 - t0
seed = int(sys.argv[2])
for run in range(int(sys.argv[3])):
    print(f"terminal {game} run {run}: {once(seed):.3f} s", flush=True)
