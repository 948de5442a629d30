import csv, re, collections, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = rows[1]; data = rows[2:]
iS = hdr.index("Warp Stall Sampling (All Samples)"); iE = hdr.index("Instructions Executed"); iSrc = hdr.index("Source")
ins = []
for r in data:
    if len(r) < len(hdr)-2: continue
    try: ins.append((r[iSrc].strip(), int(r[iS] or 0), int(r[iE] or 0)))
    except: pass
tot_s = sum(s for _, s, _ in ins); tot_e = sum(e for _, _, e in ins)
print("instrs", len(ins), "samples", tot_s, "executed", tot_e)
op = collections.Counter(); ops = collections.Counter()
for src, s, e in ins:
    o = src.split()[0] if not src.startswith("@") else src.split()[1]
    o = o.split(".")[0]
    op[o] += e; ops[o] += s
print("by opcode (executed warp-instrs, share; samples share)")
for o, e in op.most_common(30): print(f"  {o:10s} {e:10d} {e/tot_e:6.1%}  {ops[o]/tot_s:6.1%}")
# regions: find first HGMMA and last HGMMA index
hg = [k for k, (src, _, _) in enumerate(ins) if "HGMMA" in src]
print("HGMMA at", hg[:3], "...", hg[-3:], "count", len(hg))
print("top instructions by samples")
top = sorted(range(len(ins)), key=lambda k: -ins[k][1])[:45]
for k in sorted(top):
    print(f"  {k:5d} {ins[k][1]:5d} {ins[k][2]:8d}  {ins[k][0][:90]}")
cuts = [int(x) for x in sys.argv[2].split(",")] if len(sys.argv) > 2 else []
b = [0] + cuts + [len(ins)]
for a, c in zip(b, b[1:]):
    s = sum(x[1] for x in ins[a:c]); e = sum(x[2] for x in ins[a:c])
    print(f"range {a}-{c}: samples {s/tot_s:6.1%} executed {e/tot_e:6.1%}")
