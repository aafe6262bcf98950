#!/usr/bin/env python3
"""Writes ForestColl's MI250 topology (arXiv 2402.06787; its repository's topologies.py,
mi250_topology, whose numbers these are) as collkit.topology/1: per node 16 GCDs (8 MI250 packages
of two), joined by xGMI links of 50 GB/s each way, the pairs below carrying 1, 2 or 4 of them
(4: the two GCDs of one package); with more than one node, each GCD also reaches one InfiniBand
switch at 16 GB/s through a NIC of its own.

ForestColl's graph has nothing but GCDs, xGMI and the IB switch; collkit's routes never relay
through a GPU and a route between two GCDs of one host never leaves the host, so two GCDs without
an xGMI link between them would have no route and collkit would refuse the file ("rank set is not
connected"). Each node therefore has one more vertex, a CPU joined to every GCD by a link of
CONNECT_GBPS (0.001 GB/s, a megabyte a second): the routes exist, and the cut bound, ForestColl's
optimum on this graph, moves by at most 16 x 0.001 GB/s of a cut of hundreds (under 0.01%). A plan
that sends over those routes (ring here) is hopelessly slow; synth's trees keep to the xGMI pairs
and the IB switch.

usage: forestcoll_mi250.py NODES OUT.json
"""
from forestcoll_a100 import add_gpu, write

XGMI_GBPS = 50
IB_GBPS = 16
CONNECT_GBPS = 0.001
# (a, b, xGMI links between GCD a and GCD b), a < b: ForestColl's MI250 adjacency, one node.
PAIRS = [
    (0, 1, 4), (0, 4, 2), (0, 8, 1), (1, 5, 1), (1, 9, 1), (1, 10, 1), (2, 3, 4), (2, 6, 1), (2, 9, 1),
    (2, 10, 1), (3, 7, 2), (3, 11, 1), (4, 5, 4), (4, 6, 1), (5, 6, 1), (5, 7, 1), (6, 7, 4), (8, 9, 4),
    (8, 12, 2), (9, 13, 1), (10, 11, 4), (10, 14, 1), (11, 15, 2), (12, 13, 4), (12, 14, 1), (13, 14, 1),
    (13, 15, 1), (14, 15, 4),
]


def topology(nodes):
    vertices, links, ranks = [], [], []
    for n in range(nodes):
        host = f"n{n}"
        vertices.append({"id": f"{host}/cpu", "kind": "cpu", "host": host})
        for g in range(16):
            gcd = f"{host}/gcd{g}"
            add_gpu(vertices, links, ranks, host, gcd, g, IB_GBPS if nodes > 1 else 0)
            links.append({"a": gcd, "b": f"{host}/cpu", "type": "pcie", "bw_gbps": CONNECT_GBPS, "latency_us": 1.0, "lanes": 1})
        for a, b, count in PAIRS:
            links.append({"a": f"{host}/gcd{a}", "b": f"{host}/gcd{b}", "type": "xgmi", "bw_gbps": XGMI_GBPS * count,
                          "latency_us": 0.7, "lanes": count})
    return vertices, links, ranks, "forestcoll-mi250"


if __name__ == "__main__":
    write("forestcoll_mi250.py", topology)
