#!/usr/bin/env python3
"""Lists the code a CUDA fatbinary inside a shared library holds, one line per
entry: `elf sm_80`, `ptx sm_90`, ... (no cuobjdump needed).

    fatbin_archs.py LIB.so

Reads the ELF section `.nv_fatbin` and walks its fatbinary containers: a
16-byte header (magic 0xBA55ED50, version, header size, payload size), then
entries, each with a header whose first fields are the kind (1 PTX, 2 ELF),
a version, the header size and the payload size, and whose 32-bit field at
byte 28 is the architecture (80 for sm_80). Exits 1 with a message when the
file has no fatbinary or the layout is not the one described here.
"""
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
KINDS = {1: "ptx", 2: "elf"}


def fail(msg):
    print(f"fatbin_archs: {msg}", file=sys.stderr)
    sys.exit(1)


def section(data, wanted):
    if data[:4] != b"\x7fELF" or data[4] != 2:
        fail("not a 64-bit ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    def header(i):
        return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
    strtab = header(shstrndx)
    for i in range(shnum):
        name_off, _, _, _, off, size, *_ = header(i)
        start = strtab[4] + name_off
        name = data[start:data.index(b"\0", start)].decode()
        if name == wanted:
            return data[off:off + size]
    return None


def entries(blob):
    off = 0
    while off + 16 <= len(blob):
        magic, _, hsize, fsize = struct.unpack_from("<IHHQ", blob, off)
        if magic != FATBIN_MAGIC:
            if any(blob[off:off + 16]):
                fail(f"no fatbinary header at byte {off} (magic {magic:#x})")
            off += 8  # padding between containers
            continue
        p, end = off + hsize, off + hsize + fsize
        while p < end:
            kind, _, ehsize, psize = struct.unpack_from("<HHIQ", blob, p)
            arch, = struct.unpack_from("<I", blob, p + 28)
            if kind not in KINDS or ehsize < 32:
                fail(f"unknown fatbinary entry (kind {kind}, header {ehsize} bytes) at byte {p}")
            yield KINDS[kind], arch
            p += ehsize + psize
        off = (end + 7) & ~7


def main():
    if len(sys.argv) != 2:
        fail("usage: fatbin_archs.py LIB.so")
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    blob = section(data, ".nv_fatbin")
    if blob is None:
        fail(f"{sys.argv[1]} has no .nv_fatbin section (no CUDA code)")
    found = sorted(set(entries(blob)))
    if not found:
        fail(f"{sys.argv[1]}: the fatbinary holds no code")
    for kind, arch in found:
        print(f"{kind} sm_{arch}")


main()
