#include "topology/placement.hpp"

#include <hwloc.h>

#include <memory>

namespace blink::topo {

int boundPackage() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return -1;
  std::unique_ptr<hwloc_topology, decltype(&hwloc_topology_destroy)> topology(
      raw, &hwloc_topology_destroy);
  if (hwloc_topology_load(raw) != 0) return -1;
  std::unique_ptr<hwloc_bitmap_s, decltype(&hwloc_bitmap_free)> binding(hwloc_bitmap_alloc(),
                                                                        &hwloc_bitmap_free);
  if (!binding || hwloc_get_cpubind(raw, binding.get(), HWLOC_CPUBIND_PROCESS) != 0) return -1;
  const int packages = hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_PACKAGE);
  if (packages <= 0) return 0;  // no package level: the machine is one CPU (see discover.cpp)
  for (int k = 0; k < packages; ++k) {
    hwloc_obj_t package = hwloc_get_obj_by_type(raw, HWLOC_OBJ_PACKAGE, static_cast<unsigned>(k));
    if (hwloc_bitmap_isincluded(binding.get(), package->cpuset)) return k;
  }
  return -1;
}

}  // namespace blink::topo
