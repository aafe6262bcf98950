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


def add_gpu(vertices, links, ranks, host, gpu, index, nic_gbps):
    """A GPU of `host` and, with nic_gbps, its own NIC on the switch "ib" (ForestColl's nodes)."""
    vertices.append({"id": gpu, "kind": "gpu", "host": host, "index": index})
    ranks.append(gpu)
    if nic_gbps:
        nic = f"{host}/nic{index}"
        vertices.append({"id": nic, "kind": "nic", "host": host, "port_gbps": nic_gbps})
        links.append({"a": gpu, "b": nic, "type": "pcie", "bw_gbps": nic_gbps, "latency_us": 0.5, "lanes": 16})
        links.append({"a": nic, "b": "ib", "type": "infiniband", "bw_gbps": nic_gbps, "latency_us": 1.0, "lanes": 4})


def write(name, topology):
    """The command line: NODES OUT.json, the file topology(NODES) as collkit.topology/1."""
    if len(sys.argv) != 3 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        sys.exit(f"usage: {name} NODES OUT.json")
    nodes = int(sys.argv[1])
    vertices, links, ranks, label = topology(nodes)
    if nodes > 1:
        vertices.insert(0, {"id": "ib", "kind": "net_switch", "label": "InfiniBand switch"})
    with open(sys.argv[2], "w") as f:
        json.dump({"schema": "collkit.topology/1", "name": f"{label}x{nodes}", "vertices": vertices, "links": links, "ranks": ranks},
                  f, indent=1)
        f.write("\n")


def topology(nodes):
    vertices, links, ranks = [], [], []
    for n in range(nodes):
        host = f"n{n}"
        vertices.append({"id": f"{host}/nvswitch", "kind": "nvswitch", "host": host})
        for g in range(8):
            gpu = f"{host}/gpu{g}"
            links.append({"a": gpu, "b": f"{host}/nvswitch", "type": "nvlink", "bw_gbps": 300, "latency_us": 0.7, "lanes": 12})
            add_gpu(vertices, links, ranks, host, gpu, g, 25 if nodes > 1 else 0)
    return vertices, links, ranks, "forestcoll-a100"


if __name__ == "__main__":
    write("forestcoll_a100.py", topology)
