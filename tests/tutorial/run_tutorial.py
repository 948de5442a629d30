#!/usr/bin/python3
"""CTest tutorial/code: runs every code block of docs/tutorial.md in order.

    run_tutorial.py TUTORIAL.md BUILD_DIR

Each fenced block must be one of (the HTML comment on the line before the
fence says which; a block without one must be a shell block):
  <!-- file: PATH -->    written to PATH (relative to the current folder)
  (none), ```sh          run with bash -euo pipefail; the folder and the
                         exported variables carry over to the next block
  <!-- output -->        must equal what the shell block before it printed
                         on stdout, trailing spaces ignored
  <!-- not run: WHY -->  skipped (at most one: building dccc itself, which
                         the test's own build has done)
The blocks run with HOME set to a fresh temporary folder, and
`cmake --install build` installs BUILD_DIR (the build under test), so the
tutorial's `~/dccc` is a fresh install. Fails on the first block that fails,
any output that differs, or an unknown directive.
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^```(\w*)\s*$")
DIRECTIVE = re.compile(r"^<!--\s*(file:\s*(\S+)|output|not run:.*?)\s*-->\s*$")


def blocks(text):
    """(directive or None, info, body, line) for each fenced block."""
    lines = text.split("\n")
    k = 0
    while k < len(lines):
        m = FENCE.match(lines[k])
        if not m:
            k += 1
            continue
        start = k
        info = m.group(1)
        body = []
        k += 1
        while k < len(lines) and lines[k] != "```":
            body.append(lines[k])
            k += 1
        if k == len(lines):
            raise SystemExit(f"tutorial:{start + 1}: unterminated code block")
        prev = lines[start - 1] if start > 0 else ""
        d = DIRECTIVE.match(prev)
        if prev.startswith("<!--") and not d:
            raise SystemExit(f"tutorial:{start}: unknown directive {prev!r}")
        yield (d.group(1) if d else None), info, "\n".join(body) + "\n", start + 1
        k += 1


def main():
    doc, build = sys.argv[1], os.path.abspath(sys.argv[2])
    tmp = tempfile.mkdtemp(prefix="dccc-tutorial-")
    home = os.path.join(tmp, "home")
    os.makedirs(home)
    state = os.path.join(tmp, "state.sh")
    with open(state, "w") as f:
        f.write(f"cd {shlex.quote(home)}\n")
    # Debian's python3 (with NumPy) first, as on the machine the tutorial is for.
    env = {"HOME": home, "PATH": "/usr/bin:/bin:" + os.environ.get("PATH", ""), "LC_ALL": "C.UTF-8",
           "TERM": "dumb"}
    last_output = None
    skipped = ran = 0
    for directive, info, body, line in blocks(open(doc).read()):
        where = f"{doc}:{line}"
        if directive and directive.startswith("not run:"):
            skipped += 1
            if skipped > 1:
                raise SystemExit(f"{where}: more than one block is not run")
            continue
        if directive and directive.startswith("file:"):
            path = directive.split(":", 1)[1].strip()
            cwd = subprocess.run(["bash", "-c", f"source {shlex.quote(state)} && pwd"], env=env,
                                 capture_output=True, text=True, check=True).stdout.strip()
            full = os.path.join(cwd, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(body)
            continue
        if directive == "output":
            want = [l.rstrip() for l in body.rstrip("\n").split("\n")]
            got = [l.rstrip() for l in (last_output or "").rstrip("\n").split("\n")]
            if want != got:
                print(f"{where}: the output differs.\n--- the tutorial says:\n{body}--- the commands printed:\n"
                      f"{last_output}")
                raise SystemExit(1)
            continue
        if info not in ("sh", "bash"):
            raise SystemExit(f"{where}: a ```{info} block needs a directive (file:, output or not run:)")
        script = body.replace("cmake --install build ", f"cmake --install {shlex.quote(build)} ")
        wrapped = (f"source {shlex.quote(state)}\nset -euo pipefail\n"
                   f"trap 'echo \"cd $(printf %q \"$PWD\")\" > {shlex.quote(state)}; "
                   f"export -p >> {shlex.quote(state)}' EXIT\n{script}")
        p = subprocess.run(["bash", "-c", wrapped], env=env, capture_output=True, text=True)
        last_output = p.stdout
        ran += 1
        if p.returncode != 0:
            print(f"{where}: the block exited {p.returncode}:\n{body}--- stdout:\n{p.stdout}--- stderr:\n{p.stderr}")
            raise SystemExit(1)
    subprocess.run(["rm", "-rf", tmp])
    print(f"tutorial: OK ({ran} shell blocks run, {skipped} not run)")


if __name__ == "__main__":
    main()
