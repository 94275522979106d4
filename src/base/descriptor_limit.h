// The process's limit of open files. Communicators of many ranks hold descriptors that grow with
// the ranks of a host (a rendezvous root holds one per rank until all have joined; a process of
// 1024 thread-ranks holds about 6000), and the soft limit is often 1024 while the hard one is far
// higher. Like the Go runtime, weft raises the soft limit to the hard one, once per process, the
// first time a communicator of several ranks is set up; a process that relies on select() keeps
// working, since only the descriptors weft opens can be numbered past 1024.
#pragma once

namespace weft {

void raiseDescriptorLimit();

}  // namespace weft
