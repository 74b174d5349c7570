#!/usr/bin/python3
"""The job topology Blink planned on, as Blink JSON for blink-sim, from rank 0's
BLINK_DEBUG=INFO log (the "Devices (N):" and "Links (...)" listing that follows
"job topology ..."; its first occurrence).

Usage: multihost_topology.py LOG > TOPOLOGY.json
"""

import json
import re
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    lines = open(sys.argv[1], errors="replace").read().splitlines()
    start = next((i for i, l in enumerate(lines) if re.match(r"^Devices \(\d+\):$", l)), None)
    if start is None:
        sys.exit("multihost_topology.py: no device listing in " + sys.argv[1])
    devices, links = [], []
    i = start + 1
    while i < len(lines) and lines[i].startswith("  "):
        words = lines[i].split()
        d = {"id": words[0], "kind": words[1], "node": int(words[3])}
        rest = words[4:]
        while rest and rest[0] in ("gpu_index", "numa"):
            d[rest[0]] = int(rest[1])
            rest = rest[2:]
        if rest and d["kind"] != "net-switch":
            d["model"] = " ".join(rest)
        devices.append(d)
        i += 1
    if i >= len(lines) or not lines[i].startswith("Links ("):
        sys.exit("multihost_topology.py: no link listing after the devices")
    i += 1
    pattern = re.compile(r"^\s+(\S+)\s+(<->|->)\s+(\S+)\s+(\S+)\s+(\S+)\s+([\d.e+-]+) GB/s x(\d+)\s+(\S+)")
    while i < len(lines) and lines[i].startswith("  "):
        m = pattern.match(lines[i])
        if m:
            a, arrow, b, kind, generation, gbps, lanes, source = m.groups()
            link = {"from": a, "to": b, "kind": kind, "gbps": float(gbps),
                    "multiplicity": int(lanes), "duplex": arrow == "<->"}
            if generation != "-":
                link["generation"] = generation
            links.append(link)
        i += 1
    json.dump({"format": "blink-topology", "version": 1, "name": "multihost-job",
               "devices": devices, "links": links}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
