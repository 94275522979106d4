#include "topo/machine.h"

#include <unistd.h>

#include <memory>

#include "base/env.h"
#include "base/log.h"
#include "topo/cpu_binding.h"

#ifdef WEFT_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace weft::topo {
namespace {

std::string plural(int count, const char* noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

void fromSysconf(MachineInfo* out) {
  out->cpusByCore = allowedCpus();  // without cores to tell apart, the kernel's order
  int usable = !out->cpusByCore.empty() ? static_cast<int>(out->cpusByCore.size())
                                        : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  out->cores = out->hardwareThreads = usable;
  out->source = "sysconf";
}

#ifdef WEFT_HAVE_HWLOC
struct TopologyDeleter {
  void operator()(hwloc_topology* topology) const { hwloc_topology_destroy(topology); }
};
using Topology = std::unique_ptr<hwloc_topology, TopologyDeleter>;

bool isXmlPath(const std::string& description) {
  return description.find('/') != std::string::npos ||
         (description.size() > 4 && description.compare(description.size() - 4, 4, ".xml") == 0);
}

// The NUMA domains a device is attached to, as "NUMA 0" or "NUMA 0,1".
std::string localityOf(hwloc_topology_t topology, hwloc_obj_t device) {
  hwloc_obj_t parent = hwloc_get_non_io_ancestor_obj(topology, device);
  if (parent == nullptr || parent->nodeset == nullptr) return "NUMA ?";
  char* text = nullptr;
  hwloc_bitmap_list_asprintf(&text, parent->nodeset);
  std::string locality = std::string("NUMA ") + (text ? text : "?");
  free(text);
  return locality;
}

// The allowed threads of each core in turn: every core's first, then every core's second, ...
std::vector<int> cpusByCore(hwloc_topology_t topology, hwloc_const_cpuset_t allowed) {
  std::vector<std::vector<int>> threadsOfCores;
  for (hwloc_obj_t core = nullptr;
       (core = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_CORE, core));) {
    std::vector<int> threads;
    for (hwloc_obj_t pu = nullptr; (pu = hwloc_get_next_obj_inside_cpuset_by_type(
                                        topology, core->cpuset, HWLOC_OBJ_PU, pu));) {
      if (hwloc_bitmap_intersects(pu->cpuset, allowed)) {
        threads.push_back(static_cast<int>(pu->os_index));
      }
    }
    if (!threads.empty()) threadsOfCores.push_back(std::move(threads));
  }
  std::vector<int> order;
  for (size_t turn = 0;; ++turn) {
    size_t before = order.size();
    for (const std::vector<int>& threads : threadsOfCores) {
      if (turn < threads.size()) order.push_back(threads[turn]);
    }
    if (order.size() == before) return order;
  }
}

Status fromHwloc(const std::string& description, MachineInfo* out) {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) return internalError("hwloc_topology_init failed");
  Topology topology(raw);
  // Network devices are all weft asks of the I/O tree, and the Linux component finds them in
  // sysfs without the PCI objects, whose discovery reads every device's config space: in a
  // virtual machine each read traps, which cost 30 ms per process here, and seconds when a
  // host starts a hundred ranks at once.
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  hwloc_topology_set_type_filter(raw, HWLOC_OBJ_PCI_DEVICE, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_type_filter(raw, HWLOC_OBJ_BRIDGE, HWLOC_TYPE_FILTER_KEEP_NONE);
  // Network devices come from the Linux component (sysfs) alone. The PCI plugin leaks what
  // libpciaccess allocates once it is unloaded, and the GPU plugins are not needed here.
  for (const char* plugin : {"pci", "opencl", "gl"}) {
    hwloc_topology_set_components(raw, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, plugin);
  }
  if (!description.empty()) {
    int failed = isXmlPath(description) ? hwloc_topology_set_xml(raw, description.c_str())
                                        : hwloc_topology_set_synthetic(raw, description.c_str());
    if (failed != 0) {
      return invalidArgument("WEFT_TOPO: hwloc cannot read '" + description +
                             "' (an XML file path or a synthetic description like "
                             "'pack:2 numa:2 core:4 pu:2')");
    }
  }
  if (hwloc_topology_load(raw) != 0) return internalError("hwloc_topology_load failed");
  hwloc_const_cpuset_t allowed = hwloc_topology_get_allowed_cpuset(raw);
  out->hardwareThreads = 0;
  out->cores = 0;
  for (hwloc_obj_t pu = nullptr; (pu = hwloc_get_next_obj_by_type(raw, HWLOC_OBJ_PU, pu));) {
    out->hardwareThreads += hwloc_bitmap_intersects(pu->cpuset, allowed) ? 1 : 0;
  }
  for (hwloc_obj_t core = nullptr;
       (core = hwloc_get_next_obj_by_type(raw, HWLOC_OBJ_CORE, core));) {
    out->cores += hwloc_bitmap_intersects(core->cpuset, allowed) ? 1 : 0;
  }
  if (out->cores == 0) out->cores = out->hardwareThreads;  // machines hwloc shows without cores
  out->cpusByCore = cpusByCore(raw, allowed);
  out->numaDomains = std::max(1, hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_NUMANODE));
  out->packages = std::max(1, hwloc_get_nbobjs_by_type(raw, HWLOC_OBJ_PACKAGE));
  out->nics.clear();
  for (hwloc_obj_t device = nullptr; (device = hwloc_get_next_osdev(raw, device));) {
    if (device->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK ||
        device->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
      out->nics.push_back(std::string(device->name) + " (" + localityOf(raw, device) + ")");
    }
  }
  out->source = description.empty()      ? "hwloc"
                : isXmlPath(description) ? "hwloc XML: " + description
                                         : "hwloc synthetic: " + description;
  return Status::ok();
}
#endif

}  // namespace

std::string MachineInfo::summary() const {
  std::string text = plural(cores, "core") + " (" + plural(hardwareThreads, "thread") + "), " +
                     plural(packages, "package") + ", " + plural(numaDomains, "NUMA domain");
  if (!nics.empty()) {
    text += ", NICs:";
    for (const std::string& nic : nics) text += " " + nic;
  }
  return text + " [" + source + "]";
}

Status describeMachine(const std::string& description, MachineInfo* out) {
  *out = MachineInfo{};
#ifdef WEFT_HAVE_HWLOC
  return fromHwloc(description, out);
#else
  if (!description.empty()) {
    return invalidArgument("WEFT_TOPO is set, but this build of weft has no hwloc");
  }
  fromSysconf(out);
  return Status::ok();
#endif
}

const MachineInfo& thisMachine() {
  static const MachineInfo machine = [] {
    MachineInfo info;
    Status status = describeMachine(env::getString("WEFT_TOPO"), &info);
    if (!status.isOk()) {
      WEFT_WARN("%s; counting cores with sysconf instead", status.message().c_str());
      fromSysconf(&info);
    }
    return info;
  }();
  return machine;
}

}  // namespace weft::topo
