#!/usr/bin/env python3
"""Static check: every function reachable from the SIGPROF handler by direct calls and jumps
(GOT-indirect calls resolved through the binary's relocations), from `objdump -d`.
Reports allocator, lock, futex, pthread and syscall functions among them, every unresolved
indirect call, and every lock-prefixed instruction (atomics: expected only on our counters
and the table's CAS)."""
import re, subprocess, sys
binary = sys.argv[1]
allowed = sys.argv[2:]  # mangled-name substrings excluded from the walk (e.g. selftest_alloc)
dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], capture_output=True, text=True).stdout
addr2name, funcs, cur = {}, {}, None
for line in dis.splitlines():
    m = re.match(r"^([0-9a-f]+) <(.*)>:$", line)
    if m:
        cur = m.group(2); funcs[cur] = []; addr2name[int(m.group(1), 16)] = cur
        continue
    if cur and "\t" in line:
        funcs[cur].append(line.split("\t", 1)[1].strip())
# GOT slot -> target: R_X86_64_RELATIVE addends (local functions) and GLOB_DAT/JUMP_SLOT symbols
got = {}
for line in subprocess.run(["readelf", "-rW", binary], capture_output=True, text=True).stdout.splitlines():
    f = line.split()
    if len(f) >= 4 and f[2] == "R_X86_64_RELATIVE":
        got[int(f[0], 16)] = addr2name.get(int(f[3], 16), f"data@{f[3]}")
    elif len(f) >= 5 and f[2] in ("R_X86_64_GLOB_DAT", "R_X86_64_JUMP_SLOT"):
        got[int(f[0], 16)] = "extern:" + f[4]
def demangle(n):
    try:
        return subprocess.run(["rustfilt"], input=n, capture_output=True, text=True).stdout.strip() or n
    except FileNotFoundError:
        return n
roots = [f for f in funcs if re.search(r"10stackproto7handler|10stackproto10unwind_job", f)]
seen, todo, indirect, locked, externs = set(), list(roots), [], [], set()
while todo:
    f = todo.pop()
    if f in seen or any(a in f for a in allowed): continue
    seen.add(f)
    for ins in funcs.get(f, []):
        m = re.match(r"(call|jmp|j\w+)\s+([0-9a-f]+) <", ins)
        g = re.match(r"(call|jmp)\s+\*0x[0-9a-f]+\(%rip\)\s+# ([0-9a-f]+)", ins)
        if m:
            tgt = addr2name.get(int(m.group(2), 16))
            if tgt and tgt != f: todo.append(tgt)
        elif g:
            tgt = got.get(int(g.group(2), 16), f"unresolved-got@{g.group(2)}")
            if tgt.startswith("extern:") or tgt.startswith("unresolved"): externs.add(tgt)
            else: todo.append(tgt)
        elif re.match(r"(call|jmp)\s+\*", ins):
            k = funcs[f].index(ins)
            # `match` lowered to a jump table: movslq (table,idx,4) ; add ; jmp *reg
            table = ins.startswith("jmp") and any("movslq" in x for x in funcs[f][max(0, k - 3):k])
            indirect.append((f, ins + ("   [jump table]" if table else "")))
        if ins.startswith("lock "): locked.append(f)
names = sorted(seen)
bad = [n for n in names + sorted(externs) if re.search(r"alloc|malloc|free|mutex|futex|[^b]lock|Mutex|RwLock|Once|pthread|syscall|panic", n, re.I)]
print(f"{len(names)} functions reachable from the handler; external calls: {sorted(externs)}")
print(f"suspicious (allocator/lock/panic) names: {bad or 'none'}")
print(f"unresolved indirect calls/jumps: {len(indirect)}, of which jump tables: {sum('[jump table]' in i for _, i in indirect)}")
for f, i in indirect: print("   ", f[:100], "|", i)
from collections import Counter
print(f"lock-prefixed instructions: {len(locked)} in", dict(Counter(f[:60] for f in locked)))
if "-v" in allowed or True:
    for n in names: print("   ", n[:160])
