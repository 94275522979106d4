// Protection domains and memory regions. Keys are never reused, and an MR's lkey and rkey come
// from disjoint sets, so a stale key or one used in the other role fails like on hardware that
// keeps them apart (the worker looks them up when the work executes).
#include <cerrno>

#include "fake_verbs_internal.h"

namespace weft::fake_verbs {
namespace {

constexpr uint32_t kLkeyTag = 0x0b;
constexpr uint32_t kRkeyTag = 0xa7;
constexpr unsigned kSupportedAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

}  // namespace

extern "C" {

WEFT_FAKE_VERBS_EXPORT struct ibv_pd* ibv_alloc_pd(struct ibv_context* context) {
  if (!context) {
    errno = EINVAL;
    return nullptr;
  }
  State& s = state();
  std::lock_guard lock(s.mutex);
  Context* fake = findContext(s, context, "ibv_alloc_pd");
  if (!fake) {
    errno = EINVAL;
    return nullptr;
  }
  auto pd = std::make_unique<Pd>();
  pd->pub.context = context;
  pd->pub.handle = s.nextHandle++;
  pd->context = fake;
  ++fake->children;
  return &s.pds.add(std::move(pd))->pub;
}

WEFT_FAKE_VERBS_EXPORT int ibv_dealloc_pd(struct ibv_pd* pd) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  Pd* fake = findPd(s, pd, "ibv_dealloc_pd");
  if (!fake) return EINVAL;
  if (fake->mrs > 0 || fake->qps > 0) return EBUSY;
  --fake->context->children;
  s.pds.remove(fake);
  return 0;
}

// verbs.h turns ibv_reg_mr into a macro for callers; this is the exported function itself.
WEFT_FAKE_VERBS_EXPORT struct ibv_mr*(ibv_reg_mr)(struct ibv_pd* pd, void* addr, size_t length,
                                                  int access) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  Pd* fake = findPd(s, pd, "ibv_reg_mr");
  if (!fake) {
    errno = EINVAL;
    return nullptr;
  }
  if (consumeFault(&s.faults.failedRegMrs, ++s.faults.regMrCalls)) {
    errno = ENOMEM;
    return nullptr;
  }
  const unsigned flags = static_cast<unsigned>(access);
  // Remote write and atomic access need local write, as the verbs specification demands.
  const bool remoteWrites = flags & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
  if ((flags & ~(kSupportedAccess | IBV_ACCESS_OPTIONAL_RANGE)) != 0 ||
      (remoteWrites && !(flags & IBV_ACCESS_LOCAL_WRITE)) || length == 0 ||
      reinterpret_cast<uintptr_t>(addr) + length < reinterpret_cast<uintptr_t>(addr)) {
    errno = EINVAL;
    return nullptr;
  }
  if (!addr) {
    errno = EFAULT;  // what pinning a null range makes the kernel say
    return nullptr;
  }
  auto mr = std::make_unique<Mr>();
  const uint32_t keyIndex = s.nextKeyIndex++;
  mr->pub.context = fake->pub.context;
  mr->pub.pd = pd;
  mr->pub.addr = addr;
  mr->pub.length = length;
  mr->pub.handle = s.nextHandle++;
  mr->pub.lkey = keyIndex << 8 | kLkeyTag;
  mr->pub.rkey = keyIndex << 8 | kRkeyTag;
  mr->pd = fake;
  mr->access = flags & kSupportedAccess;
  Mr* added = s.mrs.add(std::move(mr));
  s.mrsByLkey.emplace(added->pub.lkey, added);
  s.mrsByRkey.emplace(added->pub.rkey, added);
  ++fake->mrs;
  return &added->pub;
}

// Work still in flight that names this MR is allowed, as on hardware; once the keys are gone it
// fails with a protection error when it executes.
WEFT_FAKE_VERBS_EXPORT int ibv_dereg_mr(struct ibv_mr* mr) {
  if (!mr) return EINVAL;
  touch(mr);
  State& s = state();
  std::lock_guard lock(s.mutex);
  Mr* fake = s.mrs.find(mr);
  if (!fake) {
    complain("ibv_dereg_mr", "unknown or deregistered MR");
    return EINVAL;
  }
  s.mrsByLkey.erase(fake->pub.lkey);
  s.mrsByRkey.erase(fake->pub.rkey);
  --fake->pd->mrs;
  s.mrs.remove(fake);
  return 0;
}

}  // extern "C"

}  // namespace weft::fake_verbs
