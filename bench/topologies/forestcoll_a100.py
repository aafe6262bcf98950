#!/usr/bin/env python3
"""Writes ForestColl's A100 topology (arXiv 2402.06787; its repository's topologies.py,
a100_topology) as collkit.topology/1: per node 8 GPUs on one NVSwitch at 300 GB/s each way,
each GPU with its own NIC at 25 GB/s, the NICs on an InfiniBand switch.

ForestColl puts odd and even NICs on two IB switches; here they are one. The AllGather optimum
is the same (its cuts between nodes count the same 25 GB/s NIC links: 342.86, 346.67 and 266.67
GB/s for 1, 2, 4 nodes by ForestColl's formula, which collkit's bound matches on these files),
and collkit refuses the two-switch form ("rank set is not connected"): its routes never relay
through a GPU, which an odd rail needs to reach an even one.

usage: forestcoll_a100.py NODES OUT.json
"""
import json
import sys


def topology(nodes):
    vertices, links, ranks = [], [], []
    if nodes > 1:
        vertices.append({"id": "ib", "kind": "net_switch", "label": "InfiniBand switch"})
    for n in range(nodes):
        host = f"n{n}"
        vertices.append({"id": f"{host}/nvswitch", "kind": "nvswitch", "host": host})
        for g in range(8):
            gpu = f"{host}/gpu{g}"
            vertices.append({"id": gpu, "kind": "gpu", "host": host, "index": g})
            ranks.append(gpu)
            links.append({"a": gpu, "b": f"{host}/nvswitch", "type": "nvlink", "bw_gbps": 300, "latency_us": 0.7, "lanes": 12})
            if nodes > 1:
                nic = f"{host}/nic{g}"
                vertices.append({"id": nic, "kind": "nic", "host": host, "port_gbps": 25})
                links.append({"a": gpu, "b": nic, "type": "pcie", "bw_gbps": 25, "latency_us": 0.5, "lanes": 16})
                links.append({"a": nic, "b": "ib", "type": "infiniband", "bw_gbps": 25, "latency_us": 1.0, "lanes": 4})
    return {"schema": "collkit.topology/1", "name": f"forestcoll-a100x{nodes}", "vertices": vertices, "links": links,
            "ranks": ranks}


if __name__ == "__main__":
    if len(sys.argv) != 3 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        sys.exit("usage: forestcoll_a100.py NODES OUT.json")
    with open(sys.argv[2], "w") as f:
        json.dump(topology(int(sys.argv[1])), f, indent=1)
        f.write("\n")
