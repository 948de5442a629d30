#!/usr/bin/python3
"""Writes the long length batches of issue 15 as length files in the shared
format (`# comment`, then one line `B: len_1 .. len_B` per batch size), so
bench/cuda/bench_mha.py (and bench/cpu) read them like
/work/shared/bench/seqlens/*.txt:

  docs2k.txt  128 documents of 200 .. 2,048 tokens (uniform): line 128
  chat4k.txt  chat turns of 16 .. 4,096 tokens (log-uniform: most turns are
              short, a few are long; the longest and shortest are included):
              lines 32 and 128

Seeded (--seed, default 15), so the files are reproducible:

  bench/make_long_seqlens.py [--out bench/seqlens] [--seed 15]
"""
import argparse
import math
import os
import random


def docs(rng, n):
    return [rng.randint(200, 2048) for _ in range(n)]


def chat(rng, n):
    lens = [int(round(math.exp(rng.uniform(math.log(16), math.log(4096))))) for _ in range(n)]
    lens[rng.randrange(n)] = 4096  # the extremes, so every run sees both
    lens[rng.randrange(n)] = 16
    return [min(4096, max(16, x)) for x in lens]


def write(path, comment, lines):
    with open(path, "w") as f:
        f.write(f"# {comment}\n")
        for b, lens in lines:
            f.write(f"{b}: {' '.join(str(x) for x in lens)}\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(here, "seqlens"))
    ap.add_argument("--seed", type=int, default=15)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(a.seed)
    d = docs(rng, 128)
    write(os.path.join(a.out, "docs2k.txt"),
          f"docs2k: 128 documents, uniform 200..2048 tokens (bench/make_long_seqlens.py --seed {a.seed}); "
          f"min/mean/max {min(d)}/{sum(d) / len(d):.0f}/{max(d)}", [(128, d)])
    c32, c128 = chat(rng, 32), chat(rng, 128)
    write(os.path.join(a.out, "chat4k.txt"),
          f"chat4k: chat turns, log-uniform 16..4096 tokens (bench/make_long_seqlens.py --seed {a.seed}); "
          f"B=32 mean {sum(c32) / 32:.0f}, B=128 mean {sum(c128) / 128:.0f}", [(32, c32), (128, c128)])
    print(f"wrote {a.out}/docs2k.txt and {a.out}/chat4k.txt")


if __name__ == "__main__":
    main()
