#!/usr/bin/python3
"""A program run with --online-reductions must print what it prints with
--materialize (the reduction chains as written), up to rounding.

  modes_agree.py DCCC PROGRAM.toy

Runs `dccc run --verify-each` in both modes, on one thread and on two
(DCC_NUM_THREADS), and compares every printed number: NaN or infinity in
the online output, a different count of numbers, or a difference above
1e-5 + 1e-5 * |materialised| fails. The materialised form is the
reference here: each of its reductions is a plain loop in source order
(tests/online/attention_diff.py checks the attention examples against
float64 NumPy).
"""
import math
import os
import re
import subprocess
import sys

NUMBER = re.compile(r"-?(?:nan|inf|\d+(?:\.\d*)?(?:e[-+]?\d+)?)")


def run(dccc, program, mode, threads):
    env = dict(os.environ, DCC_NUM_THREADS=str(threads))
    p = subprocess.run([dccc, "run", "--verify-each", mode, program], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"modes_agree: `dccc run {mode}` exited with {p.returncode}:\n{p.stderr}")
    return [float(x) for x in NUMBER.findall(p.stdout)]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    dccc, program = sys.argv[1:]
    failed = False
    for threads in (1, 2):
        online = run(dccc, program, "--online-reductions", threads)
        written = run(dccc, program, "--materialize", threads)
        if len(online) != len(written) or not written:
            print(f"threads={threads}: {len(online)} numbers online, {len(written)} materialised")
            failed = True
            continue
        worst = 0.0
        for k, (a, b) in enumerate(zip(online, written)):
            if not math.isfinite(a) and math.isfinite(b):
                print(f"threads={threads}: number {k} is {a} online, {b} materialised")
                failed = True
                break
            if math.isfinite(b):
                worst = max(worst, abs(a - b))
                if abs(a - b) > 1e-5 + 1e-5 * abs(b):
                    print(f"threads={threads}: number {k} is {a} online, {b} materialised")
                    failed = True
                    break
        print(f"threads={threads}: {len(online)} numbers, max abs difference {worst:.3g}")
    if failed:
        sys.exit(1)
    print("modes agree")


if __name__ == "__main__":
    main()
