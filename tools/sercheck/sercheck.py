#!/usr/bin/env python3
"""sercheck: checks a recorded transaction history for conflict serializability.

Input: JSON lines, one per committed transaction:
  {"id": "<coordinator>:<sequence>", "reads": [[key, version], ...],
   "writes": [[key, version_replaced], ...]}
Keys are any JSON scalars (e.g. "table:key"). A write of a record whose version was v installs
version v + 1 (farmem::txn's rule: a committed write adds one to the record's version).

The dependency graph (Adya): for each key,
  ww  the writer that installed v -> the writer that replaced v
  wr  the writer that installed v -> every transaction that read v
  rw  every transaction that read v -> the writer that replaced v (anti-dependency)
Versions no recorded transaction installed (the initial load) have no writer. Two committed
writers replacing the same version (a lost update) are reported as a violation as well.
The history is serializable iff the graph (networkx.DiGraph) has no cycle.

Exit status: 0 serializable, 1 not (the cycle or the lost update is printed), 2 bad input.
"""
import json
import sys

import networkx as nx


def load(path):
    txns = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                t = json.loads(line)
                txns.append((str(t["id"]), [tuple(r) for r in t.get("reads", [])],
                             [tuple(w) for w in t.get("writes", [])]))
            except (ValueError, KeyError, TypeError) as e:
                raise ValueError(f"{path}:{n}: not a transaction record ({e})") from e
    return txns


def build_graph(txns):
    """Returns (graph, problems): the dependency graph and any lost updates found."""
    g = nx.DiGraph()
    replaced = {}  # (key, version) -> the transaction that replaced it
    problems = []
    for tid, _, writes in txns:
        g.add_node(tid)
        for key, v in writes:
            other = replaced.get((key, v))
            if other is not None and other != tid:
                problems.append(f"lost update: {other} and {tid} both replaced {key} version {v}")
            replaced[(key, v)] = tid
    for tid, reads, writes in txns:
        for key, v in writes:
            installer = replaced.get((key, v - 1))
            if installer is not None and installer != tid:
                g.add_edge(installer, tid, kind="ww", key=key)
        for key, v in reads:
            installer = replaced.get((key, v - 1))
            if installer is not None and installer != tid:
                g.add_edge(installer, tid, kind="wr", key=key)
            overwriter = replaced.get((key, v))
            if overwriter is not None and overwriter != tid:
                g.add_edge(tid, overwriter, kind="rw", key=key)
    return g, problems


def check(txns):
    """Returns a list of violations (empty when serializable)."""
    g, problems = build_graph(txns)
    try:
        cycle = nx.find_cycle(g)
    except nx.NetworkXNoCycle:
        cycle = None
    if cycle:
        steps = ", ".join(f"{a} -{g.edges[a, b]['kind']}({g.edges[a, b]['key']})-> {b}"
                          for a, b, *_ in cycle)
        problems.append(f"dependency cycle: {steps}")
    return problems


def main(argv):
    if len(argv) != 2:
        print("usage: sercheck.py HISTORY.jsonl", file=sys.stderr)
        return 2
    try:
        txns = load(argv[1])
    except (OSError, ValueError) as e:
        print(f"sercheck: {e}", file=sys.stderr)
        return 2
    problems = check(txns)
    g, _ = build_graph(txns)
    print(f"sercheck: {len(txns)} transactions, {g.number_of_edges()} dependencies: "
          f"{'NOT serializable' if problems else 'serializable'}")
    for p in problems:
        print(f"  {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
