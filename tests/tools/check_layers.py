#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_layers.py OBJECT_OR_ARCHIVE...

Fails when the given object files (or the members of the given static
archives) call each other in a circle: A uses a symbol B defines and B, or a
file B reaches, uses one A defines. The call graph comes from nm: an edge
A -> B for each global symbol undefined in A and defined in B. Prints each
circle found, e.g. "pipeline.c.o -> ssp.c.o -> pipeline.c.o", with a symbol
of each edge. Generic: any set of objects of one program or library.
"""
import os
import subprocess
import sys


def nm_members(path, nm):
    """{member: (defined set, undefined set)} for an object or an archive."""
    out = subprocess.run([nm, "-g", "-A", path], check=True, capture_output=True,
                         text=True).stdout
    members = {}
    for line in out.splitlines():
        # "archive:member.o:0000 T sym", "obj.o:0000 T sym" or "obj.o:  U sym"
        head, _, rest = line.rpartition(":")
        if not head:
            continue
        parts = rest.split()
        if len(parts) < 2:
            continue
        sym, kind = parts[-1], parts[-2]
        name = os.path.basename(head.split(":")[-1])  # the member, or the object
        d, u = members.setdefault(name, (set(), set()))
        (u if kind in ("U", "w", "v") else d).add(sym)
    return members


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    nm = os.environ.get("NM", "nm")
    objs = {}
    for path in argv[1:]:
        for name, du in nm_members(path, nm).items():
            if name in objs:
                objs[name][0].update(du[0])
                objs[name][1].update(du[1])
            else:
                objs[name] = du
    definer = {}
    for name, (d, _) in objs.items():
        for sym in d:
            definer.setdefault(sym, name)
    edges = {name: {} for name in objs}
    for name, (_, u) in objs.items():
        for sym in sorted(u):
            b = definer.get(sym)
            if b and b != name:
                edges[name].setdefault(b, sym)
    # Strongly connected components (Tarjan): each of more than one file is
    # a circle.
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    if not sccs:
        print(f"check_layers: {len(objs)} files, no circle")
        return 0
    for comp in sccs:
        print("check_layers: these files call each other in a circle:", file=sys.stderr)
        for a in comp:
            for b, sym in sorted(edges[a].items()):
                if b in comp:
                    print(f"  {a} -> {b} ({sym})", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
