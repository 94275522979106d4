#include "usage.h"

#include <cstdio>

namespace weft::perf {

void printUsage(const char* programName) {
  std::printf(
      "USAGE: %s \n\t"
      "[-t,--nthreads <num threads>] \n\t"
      "[-g,--ngpus <gpus per thread>] (must be 1) \n\t"
      "[-b,--minbytes <min size in bytes>] \n\t"
      "[-e,--maxbytes <max size in bytes>] \n\t"
      "[-i,--stepbytes <increment size>] \n\t"
      "[-f,--stepfactor <increment factor>] \n\t"
      "[-n,--iters <iteration count>] \n\t"
      "[-m,--agg_iters <aggregated iteration count>] \n\t"
      "[-w,--warmup_iters <warmup iteration count>] \n\t"
      "[-N,--run_cycles <cycle count> run & print each cycle (default: 1; 0=infinite)] \n\t"
      "[-p,--parallel_init <0/1>] (accepted; ranks always initialise in parallel) \n\t"
      "[-I,--per_iter_timing <0/1> per-iteration host-clock timing\n\t"
      "    (best with -z 2 or -z 3; with -z 0 an iteration ends when its requests are\n\t"
      "    seen complete; with -z 1 includes barrier wait;\n\t"
      "    i_p99 uses nearest-rank percentile and may equal i_max\n\t"
      "    with <100 samples; not with -s 1 -z 0) (default: 0)] \n\t"
      "[-K,--per_iter_skip <count> exclude leading samples from -I summary stats (default: 0)] \n\t"
      "[-c,--check <check iteration count>] \n\t"
      "[-o,--op <sum/prod/min/max/avg/all>] \n\t"
      "[-d,--datatype <int8/uint8/int32/uint32/int64/uint64/half/float/double/bfloat16/all>] \n\t"
      "[-r,--root <root/all>] \n\t"
      "[-z,--blocking <0/1/2/3> 0=requests then wait, 1=barrier after each inner iter (-m), "
      "2=no barrier, 3=barrier after each outer iter (-n), not timed] \n\t"
      "[-y,--stream_null <0/1>] (accepted, no effect) \n\t"
      "[-T,--timeout <time in seconds>] \n\t"
      "[-G,--cudagraph <num graph launches>] (must be 0) \n\t"
      "[-C,--report_cputime <0/1>] \n\t"
      "[-S,--report_timestamps <0/1> report timestamps (default 0)] \n\t"
      "[-J,--output_file <file> write nccl-tests' JSON results to file (file.0, file.1, ... "
      "if it exists)] \n\t"
      "[-a,--average <0/1/2/3> report average iteration time <0=RANK0/1=AVG/2=MIN/3=MAX>] \n\t"
      "[-R,--local_register <0/1/2> enable local (1) or symmetric (2) buffer registration on "
      "send/recv buffers, both from weftMemAlloc (default: disable (0); host memory only)] \n\t"
      "[-x,--cta_policy] (not supported: weft has no CTAs) \n\t"
      "[-D,--device_implementation <0>] (must be 0: weft has no device implementations) \n\t"
      "[-V,--device_cta_count] (not supported: weft has no device implementations) \n\t"
      "[-M,--memory <0/1> enable the memory usage report (host resident memory; default: 0)] \n\t"
      "[-u,--unalign <index of first element> Misalign source and destination buffers "
      "(default: 0)] \n\t"
      "weft-specific: \n\t"
      "[-k,--memory-kind <host/device>] where the buffers live (default: $WEFT_PERF_MEMORY, "
      "else host); "
      "device: cudaMalloc on GPU rank %% device count, checked through host copies \n\t"
      "[-s,--stream <0/1>] 1=the stream-ordered weft*OnStream calls on a stream of each rank, "
      "timed to cudaStreamSynchronize (needs -k device) \n\t"
      "[-h,--help]\n",
      programName);
}

}  // namespace weft::perf
