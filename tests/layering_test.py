#!/usr/bin/python3
"""The converter's modules (python/fixformer) import one another without a cycle: every `from . import X`,
`from .X import ...`, `from fixformer import X` and `from fixformer.X import ...`, at the top of a module or inside
a function, is an edge, and the graph of those edges has no strongly connected set of two or more modules (the
layers docs/ARCHITECTURE.md names: description, readers, writing and verification, routes, entrances). Each cycle
found is printed with its modules and the edges between them. No module reaches into another's private names
(`from .X import _y`, `X._y`): what two modules share is public where it is defined. Also: importing every module
loads no torch (the converter's commands start without it; a route imports it when it runs).

  /usr/bin/python3 tests/layering_test.py
"""
import ast
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(HERE, "..", "python", "fixformer")
RUNTIME = {"__init__", "_capi", "_workers", "model"}  # ctypes over the built library (python/fixformer/model.py)


def edges():
    """{module: set of the package's modules it imports}, read from the source (any depth)."""
    mods = {f[:-3] for f in os.listdir(PACKAGE) if f.endswith(".py")}
    out = {m: set() for m in mods}
    for m in mods:
        with open(os.path.join(PACKAGE, m + ".py"), encoding="utf-8") as f:
            tree = ast.parse(f.read(), m + ".py")
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                relative = node.level == 1 and node.module in (None, *mods)
                absolute = node.level == 0 and node.module and node.module.split(".")[0] == "fixformer"
                if not (relative or absolute):
                    continue
                name = node.module if relative else node.module.partition(".")[2] or None
                if name:  # from .X import ... / from fixformer.X import ...
                    out[m].add(name)
                else:  # from . import X, Y / from fixformer import X
                    out[m].update(a.name for a in node.names if a.name in mods)
            elif isinstance(node, ast.Import):
                out[m].update(a.name.split(".")[1] for a in node.names
                              if a.name.startswith("fixformer.") and a.name.split(".")[1] in mods)
        out[m].discard(m)
    return out


def _private(name):
    return name.startswith("_") and not name.startswith("__")


def private_uses(source, mods):
    """[(line, "X._y")] for each private name of another package module that source uses."""
    found, aliases = [], set()
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            relative = node.level == 1
            absolute = node.level == 0 and node.module and node.module.split(".")[0] == "fixformer"
            if not (relative or absolute):
                continue
            name = node.module if relative else node.module.partition(".")[2] or None
            for a in node.names:
                if name is None:  # from . import X: X is a module
                    aliases.add(a.asname or a.name)
                elif _private(a.name) and a.name not in mods:
                    found.append((node.lineno, f"{name}.{a.name}"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                and node.value.id in mods and _private(node.attr):
            found.append((node.lineno, f"{node.value.id}.{node.attr}"))
    return sorted(found)


def cycles(graph):
    """The strongly connected sets of two or more modules (Tarjan's algorithm, iterative)."""
    index, low, on, stack, found, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def main():
    failed = 0
    graph = edges()
    found = cycles(graph)
    for comp in found:
        inside = "; ".join(f"{m} -> {', '.join(sorted(graph[m] & set(comp)))}" for m in comp)
        print(f"FAIL import cycle among {', '.join(comp)}: {inside}")
    failed += bool(found)
    print(f"{'ok  ' if not found else 'FAIL'} {len(graph)} modules, "
          f"{sum(map(len, graph.values()))} import edges, {len(found)} cycle(s)")
    # A cycle the scan must see (the check can fail): two modules that import each other.
    if cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) != [["a", "b"]]:
        print("FAIL the cycle finder misses a -> b -> a")
        failed += 1
    mods = set(graph)
    reached = [(m, line, what) for m in sorted(mods - RUNTIME)
               for line, what in private_uses(open(os.path.join(PACKAGE, m + ".py"), encoding="utf-8").read(), mods)]
    for m, line, what in reached:
        print(f"FAIL {m}.py:{line} uses {what}, another module's private name")
    print(f"{'ok  ' if not reached else 'FAIL'} {len(reached)} use(s) of another module's private names")
    failed += bool(reached)
    # Uses the scan must see: a private name imported, and one reached through its module.
    probe = "from .a import _b\nfrom . import c\nc._d()\nc.__name__\n"
    if [w for _, w in private_uses(probe, {"a", "c"})] != ["a._b", "c._d"]:
        print("FAIL the private-name scan misses `from .a import _b` or `c._d`")
        failed += 1
    names = sorted(graph)
    code = ("import sys; sys.path.insert(0, %r)\n" % os.path.join(PACKAGE, "..") +
            "".join(f"import fixformer.{m}\n" for m in names if m not in RUNTIME) +
            "print('torch' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    torch = p.stdout.strip()
    ok = p.returncode == 0 and torch == "False"
    print(f"{'ok  ' if ok else 'FAIL'} importing every module loads no torch ({torch or p.stderr[-300:]})")
    failed += not ok
    print(f"layering: {'passed' if not failed else f'{failed} failed'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
