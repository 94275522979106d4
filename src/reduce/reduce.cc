// Dispatch for the reduction kernels: the tables of all variants are built on first use, and the
// best variant this CPU supports is chosen then, once per process. kernelFor() is a table lookup.
#include "reduce/reduce.h"

#include "reduce/kernels.h"

namespace weft::reduce {
namespace detail {
namespace {

bool cpuSupports(Isa isa) {
  // Needed when we run before libgcc's own constructor has filled in the CPU model, e.g. from
  // another shared library's static initialiser.
  __builtin_cpu_init();
  // libgcc reports AVX and AVX-512 features only when the OS also saves their registers (XCR0).
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
  switch (isa) {
    case Isa::kBaseline:
      return true;
    case Isa::kAvx2:
      return avx2;
    case Isa::kAvx512:
      return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  }
  return false;
}

struct Dispatch {
  KernelTable tables[kNumIsas];
  bool supported[kNumIsas] = {};
  Isa selected = Isa::kBaseline;

  Dispatch() {
    for (int i = 0; i < kNumIsas; ++i) {
      const Isa isa = Isa(i);
      addIntKernels(isa, tables[i]);
      addFloatKernels(isa, tables[i]);
      addHalfKernels(isa, tables[i]);
      supported[i] = cpuSupports(isa);
      if (supported[i]) selected = isa;  // the variants are ordered by capability
    }
  }
};

const Dispatch& dispatch() {
  static const Dispatch instance;
  return instance;
}

bool isIsa(Isa isa) {
  return int(isa) >= 0 && int(isa) < kNumIsas;
}

}  // namespace

bool isaSupported(Isa isa) {
  return isIsa(isa) && dispatch().supported[int(isa)];
}

Isa selectedIsa() {
  return dispatch().selected;
}

const char* isaName(Isa isa) {
  switch (isa) {
    case Isa::kBaseline:
      return "baseline";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "unknown";
}

ReduceFn kernelForIsa(Isa isa, weftDataType_t type, weftRedOp_t op) {
  if (!isaSupported(isa) || !isValidType(type) || !isValidOp(op)) return nullptr;
  return dispatch().tables[int(isa)].reduce[type][op];
}

AvgFn avgKernelForIsa(Isa isa, weftDataType_t type) {
  if (!isaSupported(isa) || !isValidType(type)) return nullptr;
  return dispatch().tables[int(isa)].avg[type];
}

}  // namespace detail

ReduceFn kernelFor(weftDataType_t type, weftRedOp_t op) {
  return detail::kernelForIsa(detail::selectedIsa(), type, op);
}

void finishAvg(void* buf, size_t count, weftDataType_t type, int nranks) {
  // With one rank the sum already is the average; fewer has no meaning and must not divide.
  if (nranks <= 1 || count == 0) return;
  if (detail::AvgFn avg = detail::avgKernelForIsa(detail::selectedIsa(), type)) {
    avg(buf, count, nranks);
  }
}

const char* isaName() {
  return detail::isaName(detail::selectedIsa());
}

}  // namespace weft::reduce
