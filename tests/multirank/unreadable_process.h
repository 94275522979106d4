// For the checkers run under weftrun with WEFT_TEST_UNDUMPABLE=1: a process its peers cannot
// read, so that the shm transport's single-copy reads and the zero-copy buffers must fall back.
#pragma once

namespace weft::test {

// Makes this process unreadable by its peers' process_vm_readv and /proc/<pid>/fd: not
// dumpable, and (for root, which could read it anyway) without CAP_SYS_PTRACE.
void refuseCrossMemoryReads();

}  // namespace weft::test
