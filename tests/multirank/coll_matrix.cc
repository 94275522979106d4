#include "multirank/coll_matrix.h"

#include <cstring>
#include <functional>
#include <iterator>
#include <random>
#include <sstream>

#include "multirank/coll_values.h"

namespace weft::test {
namespace {

constexpr weftDataType_t kAllTypes[] = {weftInt8,    weftUint8,   weftInt32,   weftUint32,
                                        weftInt64,   weftUint64,  weftFloat16, weftFloat32,
                                        weftFloat64, weftBfloat16};
constexpr weftRedOp_t kAllOps[] = {weftSum, weftProd, weftMax, weftMin, weftAvg};
constexpr const char* kTypeNames[] = {"int8",   "uint8",   "int32",   "uint32",  "int64",
                                      "uint64", "float16", "float32", "float64", "bfloat16"};
constexpr const char* kOpNames[] = {"sum", "prod", "max", "min", "avg"};
constexpr size_t kMaxMessages = 8;

bool isReduction(Coll coll) {
  return coll == Coll::kAllReduce || coll == Coll::kReduce || coll == Coll::kReduceScatter;
}

// One call of the matrix: buffers, expected output, and where to compare.
struct Case {
  Coll coll;
  weftDataType_t type;
  weftRedOp_t op;
  size_t count;
  bool inPlace;
  int root;
};

class Runner {
 public:
  Runner(weftComm_t comm, const MatrixOptions& options) : comm_(comm), options_(options) {
    weftCommUserRank(comm, &rank_);
    weftCommCount(comm, &nranks_);
  }

  MatrixResult run() {
    std::vector<weftDataType_t> types = options_.types;
    if (types.empty()) types.assign(std::begin(kAllTypes), std::end(kAllTypes));
    std::vector<weftRedOp_t> ops = options_.ops;
    if (ops.empty()) ops.assign(std::begin(kAllOps), std::end(kAllOps));
    std::vector<size_t> counts = options_.counts.empty() ? sizeClasses(nranks_) : options_.counts;
    for (Coll coll : options_.colls) {
      for (weftDataType_t type : types) {
        for (weftRedOp_t op : isReduction(coll) ? ops : std::vector<weftRedOp_t>{weftSum}) {
          for (size_t count : counts) {
            for (bool inPlace : {false, true}) {
              int root = static_cast<int>((static_cast<size_t>(type) + count) % nranks_);
              if (!runCase(Case{coll, type, op, count, inPlace, root})) return result_;
            }
          }
        }
      }
    }
    return result_;
  }

  // `iterations` calls drawn from a generator seeded alike on every rank, so all ranks make the
  // same calls: collective, datatype, op, root, in place or not, and a count up to maxCount.
  MatrixResult runRandom(uint64_t seed, int iterations, size_t maxCount) {
    std::mt19937_64 draw(seed);
    const std::vector<Coll> colls = options_.colls.empty() ? allColls() : options_.colls;
    for (int i = 0; i < iterations; ++i) {
      Coll coll = colls[draw() % colls.size()];
      auto type = static_cast<weftDataType_t>(draw() % std::size(kAllTypes));
      auto op = kAllOps[draw() % std::size(kAllOps)];
      size_t count = draw() % (maxCount + 1);
      bool inPlace = draw() % 2 == 1;
      int root = static_cast<int>(draw() % static_cast<uint64_t>(nranks_));
      if (!isReduction(coll)) op = weftSum;
      if (coll == Coll::kBarrier) {  // the one form the matrix runs a barrier in
        type = weftInt8;
        count = 0;
        inPlace = false;
      }
      if (!runCase(Case{coll, type, op, count, inPlace, root})) break;
      if (options_.afterCall) options_.afterCall(i + 1);
    }
    return result_;
  }

 private:
  // Returns false when the communicator itself failed (nothing more can run).
  bool runCase(const Case& c) {
    const size_t size = elementSize(c.type);
    const size_t n = static_cast<size_t>(nranks_);
    const size_t total = c.count * n;
    send_.assign(total * size + 64, std::byte{0x5a});
    recv_.assign(total * size + 64, std::byte{0xa5});
    expected_.assign(total * size + 64, std::byte{0});
    const bool reduction = isReduction(c.coll);
    const bool isSigned = isSignedType(c.type);
    auto input = [&](int rank, size_t index) {
      return inputValue(c.op, reduction, isSigned, rank, index);
    };
    void* s = send_.data();
    void* r = recv_.data();
    char* rb = reinterpret_cast<char*>(r);
    size_t checkFrom = 0;
    size_t checkCount = 0;
    std::function<weftResult_t(weftRequest_t*)> call;

    switch (c.coll) {
      case Coll::kAllReduce:
      case Coll::kBroadcast:
      case Coll::kReduce: {
        for (size_t i = 0; i < c.count; ++i) storeValue(c.type, s, i, input(rank_, i));
        if (c.inPlace) {
          std::memcpy(r, s, c.count * size);
          s = r;
        }
        const bool writes = c.coll == Coll::kAllReduce || rank_ == c.root;
        checkCount = writes ? c.count : 0;
        for (size_t i = 0; i < checkCount; ++i) {
          if (c.coll == Coll::kBroadcast) {
            storeValue(c.type, expected_.data(), i, input(c.root, i));
          } else {
            storeReduced(c.type, c.op, nranks_, i, expected_.data(), i);
          }
        }
        if (c.coll == Coll::kAllReduce) {
          call = [&, s, r](weftRequest_t* q) {
            return weftAllReduce(dev(s), dev(r), c.count, c.type, c.op, comm_, q);
          };
        } else if (c.coll == Coll::kBroadcast) {
          call = [&, s, r](weftRequest_t* q) {
            return weftBroadcast(dev(s), dev(r), c.count, c.type, c.root, comm_, q);
          };
        } else {
          call = [&, s, r](weftRequest_t* q) {
            return weftReduce(dev(s), dev(r), c.count, c.type, c.op, c.root, comm_, q);
          };
        }
        break;
      }
      case Coll::kAllGather:
      case Coll::kGather: {
        void* src = s;
        if (c.inPlace && (c.coll == Coll::kAllGather || rank_ == c.root)) {
          src = rb + rank_ * c.count * size;
        }
        for (size_t i = 0; i < c.count; ++i) storeValue(c.type, src, i, input(rank_, i));
        const bool writes = c.coll == Coll::kAllGather || rank_ == c.root;
        checkCount = writes ? total : 0;
        for (size_t b = 0; writes && b < n; ++b) {
          for (size_t i = 0; i < c.count; ++i) {
            storeValue(c.type, expected_.data(), b * c.count + i, input(static_cast<int>(b), i));
          }
        }
        if (c.coll == Coll::kAllGather) {
          call = [&, src, r](weftRequest_t* q) {
            return weftAllGather(dev(src), dev(r), c.count, c.type, comm_, q);
          };
        } else {
          call = [&, src, r](weftRequest_t* q) {
            return weftGather(dev(src), dev(r), c.count, c.type, c.root, comm_, q);
          };
        }
        break;
      }
      case Coll::kReduceScatter:
      case Coll::kScatter:
      case Coll::kAlltoAll: {
        const int owner = c.coll == Coll::kScatter ? c.root : rank_;
        for (size_t i = 0; i < total; ++i) storeValue(c.type, s, i, input(owner, i));
        void* dst = r;
        if (c.inPlace) {
          if (c.coll == Coll::kAlltoAll) {
            std::memcpy(r, s, total * size);
            s = r;
          } else if (c.coll == Coll::kReduceScatter || rank_ == c.root) {
            dst = static_cast<char*>(s) + rank_ * c.count * size;
          }
        }
        checkCount = c.coll == Coll::kAlltoAll ? total : c.count;
        checkFrom = 0;
        for (size_t i = 0; i < checkCount; ++i) {
          if (c.coll == Coll::kReduceScatter) {
            storeReduced(c.type, c.op, nranks_, rank_ * c.count + i, expected_.data(), i);
          } else if (c.coll == Coll::kScatter) {
            storeValue(c.type, expected_.data(), i, input(c.root, rank_ * c.count + i));
          } else {
            size_t block = i / std::max<size_t>(c.count, 1);
            size_t offset = i % std::max<size_t>(c.count, 1);
            storeValue(c.type, expected_.data(), i,
                       input(static_cast<int>(block), rank_ * c.count + offset));
          }
        }
        resultBuffer_ = dst;
        if (c.coll == Coll::kReduceScatter) {
          call = [&, s, dst](weftRequest_t* q) {
            return weftReduceScatter(dev(s), dev(dst), c.count, c.type, c.op, comm_, q);
          };
        } else if (c.coll == Coll::kScatter) {
          call = [&, s, dst](weftRequest_t* q) {
            return weftScatter(dev(s), dev(dst), c.count, c.type, c.root, comm_, q);
          };
        } else {
          call = [&, s, dst](weftRequest_t* q) {
            return weftAlltoAll(dev(s), dev(dst), c.count, c.type, comm_, q);
          };
        }
        break;
      }
      case Coll::kBarrier:
        if (c.inPlace || c.count > 1 || c.type != weftInt8) return true;
        call = [&](weftRequest_t* q) { return weftBarrier(comm_, q); };
        break;
      case Coll::kSendRecv: {
        const int next = (rank_ + 1) % nranks_;
        const int prev = (rank_ + nranks_ - 1) % nranks_;
        for (size_t i = 0; i < c.count; ++i) storeValue(c.type, s, i, input(rank_, i));
        checkCount = c.count;
        for (size_t i = 0; i < c.count; ++i)
          storeValue(c.type, expected_.data(), i, input(prev, i));
        if (outstandingExchange(c)) {
          call = [&, s, r, next, prev](weftRequest_t* q) {
            return exchangeOutstanding(s, r, c, next, prev, q);
          };
          break;
        }
        call = [&, s, r, next, prev](weftRequest_t* q) {
          weftGroupStart();
          weftResult_t sent = weftSend(dev(s), c.count, c.type, next, comm_, nullptr);
          weftResult_t received = weftRecv(dev(r), c.count, c.type, prev, comm_, q);
          weftResult_t ended = weftGroupEnd();
          return sent != weftSuccess ? sent : received != weftSuccess ? received : ended;
        };
        break;
      }
    }
    void* result = resultBuffer_ != nullptr ? resultBuffer_ : r;
    resultBuffer_ = nullptr;
    ++result_.calls;
    weftResult_t status = options_.device ? issueOnDevice(call) : issue(call);
    if (status != weftSuccess) {
      fail(c,
           std::string("returned ") + weftGetErrorString(status) + ": " + weftGetLastError(comm_));
      return false;
    }
    for (size_t i = checkFrom; i < checkFrom + checkCount; ++i) {
      if (!sameElement(c.type, result, expected_.data(), i)) {
        std::ostringstream what;
        what << "element " << i << " is " << loadValue(c.type, result, i) << ", expected "
             << loadValue(c.type, expected_.data(), i);
        fail(c, what.str());
        break;
      }
    }
    return true;
  }

  // The device twin of a host image address (the address itself without device memory).
  void* dev(const void* host) const {
    if (!options_.device || host == nullptr) return const_cast<void*>(host);
    const auto* address = static_cast<const std::byte*>(host);
    if (address >= send_.data() && address < send_.data() + send_.size()) {
      return static_cast<std::byte*>(deviceSend_) + (address - send_.data());
    }
    return static_cast<std::byte*>(deviceRecv_) + (address - recv_.data());
  }

  // Uploads the host images to device twins, runs the call on the twins, and downloads them.
  weftResult_t issueOnDevice(const std::function<weftResult_t(weftRequest_t*)>& call) {
    DeviceMemory& device = *options_.device;
    deviceSend_ = device.allocate(send_.size());
    deviceRecv_ = device.allocate(recv_.size());
    device.upload(deviceSend_, send_.data(), send_.size());
    device.upload(deviceRecv_, recv_.data(), recv_.size());
    weftResult_t status = issue(call);
    device.download(send_.data(), deviceSend_, send_.size());
    device.download(recv_.data(), deviceRecv_, recv_.size());
    device.release(deviceSend_);
    device.release(deviceRecv_);
    deviceSend_ = deviceRecv_ = nullptr;
    return status;
  }

  // A send/recv case has no in-place form; its second run issues the exchange as two
  // non-blocking calls outside a group instead, each left outstanding (core/outstanding.h).
  // Device buffers are not left outstanding: there a receive posted before the send would wait
  // for a peer whose own receive blocks its send, so they stay grouped.
  bool outstandingExchange(const Case& c) const {
    return c.coll == Coll::kSendRecv && c.inPlace && !options_.device;
  }

  // Every rank posts its receive first and then its send, and waits for the send first: each
  // completes only because the other was left outstanding. Both are waited for here, so the
  // caller's request (if any) stays empty.
  weftResult_t exchangeOutstanding(void* s, void* r, const Case& c, int next, int prev,
                                   weftRequest_t* q) {
    if (q != nullptr) *q = nullptr;
    weftRequest_t receiving = nullptr, sending = nullptr;
    const weftResult_t received = weftRecv(r, c.count, c.type, prev, comm_, &receiving);
    const weftResult_t sent = weftSend(s, c.count, c.type, next, comm_, &sending);
    const weftResult_t sendDone = sending != nullptr ? weftWait(&sending, -1) : sent;
    const weftResult_t receiveDone = receiving != nullptr ? weftWait(&receiving, -1) : received;
    for (weftResult_t result : {received, sent, sendDone, receiveDone}) {
      if (result != weftSuccess) return result;
    }
    return weftSuccess;
  }

  weftResult_t issue(const std::function<weftResult_t(weftRequest_t*)>& call) {
    if (!options_.nonBlocking) return call(nullptr);
    weftRequest_t request = nullptr;
    weftResult_t posted = call(&request);
    if (posted != weftSuccess || request == nullptr) return posted;
    return weftWait(&request, -1);
  }

  void fail(const Case& c, const std::string& what) {
    ++result_.failures;
    if (result_.messages.size() >= kMaxMessages) return;
    std::ostringstream message;
    message << "rank " << rank_ << "/" << nranks_ << ": " << collLabel(c.coll) << " "
            << kTypeNames[c.type] << " " << (isReduction(c.coll) ? kOpNames[c.op] : "-")
            << " count " << c.count
            << (outstandingExchange(c) ? " left outstanding"
                : c.inPlace            ? " in-place"
                                       : " out-of-place")
            << " root " << c.root << ": " << what;
    result_.messages.push_back(message.str());
  }

  weftComm_t comm_;
  const MatrixOptions& options_;
  int rank_ = 0;
  int nranks_ = 1;
  std::vector<std::byte> send_, recv_, expected_;
  void* resultBuffer_ = nullptr;
  void* deviceSend_ = nullptr;
  void* deviceRecv_ = nullptr;
  MatrixResult result_;
};

}  // namespace

const char* collLabel(Coll coll) {
  constexpr const char* kLabels[] = {"allreduce",     "broadcast", "reduce", "allgather",
                                     "reducescatter", "alltoall",  "gather", "scatter",
                                     "barrier",       "sendrecv"};
  return kLabels[static_cast<int>(coll)];
}

std::vector<Coll> allColls() {
  return {Coll::kAllReduce,     Coll::kBroadcast, Coll::kReduce, Coll::kAllGather,
          Coll::kReduceScatter, Coll::kAlltoAll,  Coll::kGather, Coll::kScatter,
          Coll::kBarrier,       Coll::kSendRecv};
}

std::vector<size_t> sizeClasses(int nranks) {
  return {0, 1, 7, static_cast<size_t>(nranks) * 5 + 3, 40001};
}

MatrixResult runMatrix(weftComm_t comm, const MatrixOptions& options) {
  return Runner(comm, options).run();
}

MatrixResult runRandomCalls(weftComm_t comm, const MatrixOptions& options, uint64_t seed,
                            int iterations, size_t maxCount) {
  return Runner(comm, options).runRandom(seed, iterations, maxCount);
}

}  // namespace weft::test
