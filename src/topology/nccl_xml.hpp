// An importer for the topology XML that NCCL writes when NCCL_TOPO_DUMP_FILE is set
// (and reads back from NCCL_TOPO_FILE), so that a machine NCCL has already described
// can be planned on without running discovery there.
//
// What is read: <system> with <cpu numaid vendor ...> sockets; under them a tree of
// <pci busid class link_speed link_width> elements; a <pci> holding a <gpu dev sm>
// is a GPU, whose <nvlink target count tclass> children are its NVLinks; a <pci>
// holding a <nic> with <net name dev speed> children is a NIC (one Blink NIC per
// <net>); <nic> directly under <cpu> is a NIC without PCIe details.
//
// How it maps to Blink's model:
//   - devices: "cpu<numaid>", "gpu<dev>" (gpu_index = dev), "pcisw<k>" for each PCI
//     bridge that still fans out to two or more GPUs/NICs after bridges that lead to
//     nothing are dropped and single-child bridges are collapsed into their child's
//     link (the slower of the two links is kept), "nic<k>" for each <net>,
//     "nvswitch0" for every NVSwitch-bound NVLink of the system;
//   - links (all duplex): PCIe from link_speed/link_width (widths rounded down to
//     1/2/4/8/16; PCIe gens the link table lacks, 1, 2 and 6, are the nearest gen in
//     the table scaled by the ratio of payload rates and named "pcie<gen>x<width>");
//     NVLink between GPU pairs (one link per unordered pair, multiplicity = count,
//     generation from the older GPU's sm), to nvswitch0 (counts summed per GPU), or to
//     the GPU's own CPU for tclass 0x068001 (POWER9-style CPU NVLink); SMP between
//     every pair of sockets ("xgmi" on AuthenticAMD, "qpi" otherwise);
//   - a NIC's port rate goes into its model ("mlx5_0 100 Gb/s"); no network link is
//     added, since clusters are assembled elsewhere.
// Ignored: <pcilink>, <c2c>, NCCL's tuning attributes (gdr, rank, latency, maxconn...).
// Rejected: several hosts in one file (distinct host_hash), several <gpu> in one <pci>
// (MLOPart partitions), and every malformed case listed in importNcclXmlString.
#pragma once

#include <string>

#include "topology/link_table.hpp"
#include "topology/topology.hpp"

namespace blink::topo {

// Reads the file at `path`; throws blink::Error(blinkInvalidInput) if it cannot be read
// or is not a topology Blink can import (see importNcclXmlString).
Topology importNcclXml(const std::string& path, const LinkTable& table);

// Parses `xml`; `origin` names it in error messages (a path, or "<string>"). Throws
// blink::Error(blinkInvalidInput) naming the origin (and the line, for XML syntax
// errors) when the text is not XML, has no <system> root, a <gpu> dev is not a
// non-negative integer, an <nvlink> target is neither a <gpu> of the file nor of a
// non-GPU class, a link_speed is not one of NCCL's GT/s values, or a number is
// malformed. Never returns a partial topology.
Topology importNcclXmlString(const std::string& xml, const std::string& origin,
                             const LinkTable& table);

}  // namespace blink::topo
