#include "cuda/stream_order.h"

#include <algorithm>
#include <string>

namespace weft::device {

Status recordInputs(GpuState* gpu, Stream stream, const char* fn, Event* out) {
  DeviceApi* api = gpu->api();
  if (gpu->device() < 0) {
    int current = 0;
    WEFT_TRY(api->currentDevice(&current).withContext(fn));
    WEFT_TRY(gpu->bindDevice(current, fn, "the caller's current GPU"));
  }
  Event event = nullptr;
  Status created = api->eventCreate(&event);
  if (!created.isOk()) return created.withContext(std::string(fn) + ": creating an event");
  Status recorded = api->eventRecord(event, stream);
  if (!recorded.isOk()) {
    api->eventDestroy(event);
    return recorded.withContext(std::string(fn) + ": stream");
  }
  *out = event;
  return Status::ok();
}

Status enqueueOrdered(weftComm* comm, GpuState* gpu, Op op, const std::vector<Stream>& streams,
                      std::vector<Event> inputs) {
  auto order = std::make_shared<StreamOrder>();
  order->api = gpu->api();
  order->inputsReady = std::move(inputs);
  std::lock_guard<std::mutex> lock(gpu->orderMutex());
  WEFT_TRY(gpu->releaseFlag(&order->flag));
  order->call = gpu->nextCall();
  Status waited;
  std::vector<Stream> waiting;
  for (Stream stream : streams) {
    if (std::find(waiting.begin(), waiting.end(), stream) != waiting.end()) continue;
    waited = gpu->api()->streamWaitFlag(stream, order->flag->deviceWord(), order->call);
    if (!waited.isOk()) break;
    waiting.push_back(stream);
  }
  // Queued whatever happened: releases must come in call order, and the executor gives this
  // one after the calls before it (a failed communicator ends the call at once).
  if (!waited.isOk()) markFailed(comm, waited);
  op.streamOrder = std::move(order);
  comm->executor->enqueue(std::move(op));
  return waited;
}

}  // namespace weft::device
