#include "transports/conformance/harness.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "bootstrap/peer_info.h"
#include "net/auth.h"
#include "transports/capabilities.h"

namespace weft::test::conformance {
namespace {

// Polls before each sleep, as the fabric spins briefly before it sleeps.
constexpr int kPollsBeforeSleep = 32;
// A sleep ends after this long even when waitFd() stays quiet, so that a missed wake-up shows
// as a count (Driven::missedWakeUps) rather than a hang.
constexpr int kSleepCapMs = 1000;

size_t completed(const std::vector<Xfer*>& xfers) {
  return static_cast<size_t>(
      std::count_if(xfers.begin(), xfers.end(), [](const Xfer* xfer) { return xfer->done; }));
}

bool anyFailed(const std::vector<Xfer*>& xfers) {
  return std::any_of(xfers.begin(), xfers.end(),
                     [](const Xfer* xfer) { return xfer->done && !xfer->status.isOk(); });
}

// The loop behind drive(), awaitFailure() and idle(): progress, record the first failure, stop
// once done() holds; between rounds poll a little, then sleep on waitFd(). The completed
// transfers tell a missed wake-up.
Driven pump(Transport& transport, int timeoutMs, OnFailure onFailure,
            const std::vector<Xfer*>& xfers, const std::function<bool(const Driven&)>& done) {
  Driven out;
  const Deadline deadline = Deadline::after(timeoutMs);
  TransportCapabilities* capabilities = transport.capabilities();
  bool woken = false;
  bool sleptToCap = false;
  bool announced = false;
  int polls = 0;
  for (;;) {
    const size_t completedBefore = completed(xfers);
    const bool failedBefore = !out.progress.isOk();
    Status progressed = transport.progress(woken);
    if (!progressed.isOk() && out.progress.isOk()) out.progress = std::move(progressed);
    if (sleptToCap &&
        (completed(xfers) != completedBefore || failedBefore != !out.progress.isOk())) {
      ++out.missedWakeUps;
    }
    woken = sleptToCap = false;
    // A failed transfer is a failure to react to too, as in the fabric.
    if (onFailure == OnFailure::kAnnounce && !announced &&
        (!out.progress.isOk() || anyFailed(xfers))) {
      announced = true;
      transport.announceFailure(transport.findCulprit());
    }
    if (done(out)) {
      out.finished = true;
      return out;
    }
    if (deadline.expired()) return out;
    if (++polls < kPollsBeforeSleep) continue;
    polls = 0;
    if (capabilities != nullptr && !capabilities->prepareToSleep()) continue;
    const int capMs = deadline.remainingMs(kSleepCapMs);
    pollfd wait{transport.waitFd(), POLLIN, 0};
    const int ready = poll(&wait, 1, capMs);
    if (capabilities != nullptr) capabilities->finishSleep();
    woken = true;
    sleptToCap = ready == 0 && capMs == kSleepCapMs;
  }
}

}  // namespace

Cluster::Cluster(Kind kind, int nranks, const std::function<Knobs(int)>& knobsFor,
                 std::vector<int> members)
    : nranks_(nranks),
      members_(std::move(members)),
      transports_(nranks),
      addresses_(nranks),
      names_(nranks) {
  if (members_.empty()) {
    for (int rank = 0; rank < nranks; ++rank) members_.push_back(rank);
  }
  for (int rank = 0; rank < nranks; ++rank) {
    PeerInfo info;
    info.rank = rank;
    info.hostName = "conformance";
    info.pid = static_cast<int32_t>(getpid());
    names_[rank] = info.describe();
  }
  for (int rank : members_) {
    transports_[rank] = createTransport(kind, knobsFor ? knobsFor(rank) : Knobs{});
  }
  REQUIRE(net::randomBytes(secret_.data(), secret_.size()).isOk());
  REQUIRE(net::randomBytes(&commId_, sizeof(commId_)).isOk());
  commId_ |= 1;  // a zero id is what the strays send
}

Cluster::~Cluster() {
  // Whatever a test left open goes without a goodbye, as a failed set-up's transports do.
  for (auto& transport : transports_) transport.reset();
}

std::vector<int> Cluster::peersOf(int rank) const {
  std::vector<int> peers;
  for (int member : members_) {
    if (member != rank) peers.push_back(member);
  }
  return peers;
}

std::string Cluster::listenAll() {
  std::string errors;
  for (int rank : members_) {
    Status listened = transports_[rank]->listen(&addresses_[rank]);
    if (!listened.isOk()) errors += names_[rank] + ": listen: " + listened.message() + "\n";
  }
  return errors;
}

std::string Cluster::connectAll(int timeoutMs) {
  std::vector<Status> results(nranks_);
  const Deadline deadline = Deadline::after(timeoutMs);
  onRankThreads(members_, [&](int rank) {
    ConnectContext context;
    context.rank = rank;
    context.nranks = nranks_;
    context.addresses = addresses_;
    context.peerNames = names_;
    context.secret = secret_;
    context.commId = commId_;
    context.deadline = deadline;
    results[rank] = transports_[rank]->connect(context, peersOf(rank));
  });
  std::string errors;
  for (int rank : members_) {
    if (!results[rank].isOk()) errors += names_[rank] + ": connect: " + describe(results[rank]);
  }
  return errors;
}

Connected::Connected(Kind kind, int nranks, const std::function<Knobs(int)>& knobsFor,
                     std::vector<int> members, bool warmUp)
    : cluster(kind, nranks, knobsFor, std::move(members)) {
  INFO(nameOf(kind));
  const std::string listened = cluster.listenAll();
  REQUIRE(listened.empty());
  const std::string connected = cluster.connectAll();
  REQUIRE(connected.empty());
  if (warmUp) {
    const std::string exchanged = smallExchange(cluster, cluster.members());
    REQUIRE(exchanged.empty());
  }
}

NothingLeftBehind::NothingLeftBehind(Kind kind) : session_(kind), fds_(openFds()) {}

void NothingLeftBehind::check() const {
  CHECK(openFds() == fds_);
  CHECK(session_.liveVerbsObjects() == 0);
}

void onRankThreads(const std::vector<int>& ranks, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int rank : ranks) threads.emplace_back(body, rank);
  for (std::thread& thread : threads) thread.join();
}

void TimedBarrier::wait(int timeoutMs) {
  std::unique_lock<std::mutex> lock(mutex_);
  const uint64_t generation = generation_;
  if (++arrived_ == parties_) {
    arrived_ = 0;
    ++generation_;
    changed_.notify_all();
    return;
  }
  if (!changed_.wait_for(lock, std::chrono::milliseconds(timeoutMs),
                         [&] { return generation_ != generation; })) {
    gaveUp_ = true;
  }
}

Driven drive(Transport& transport, const std::vector<Xfer*>& xfers, int timeoutMs,
             OnFailure onFailure) {
  return pump(transport, timeoutMs, onFailure, xfers,
              [&xfers](const Driven&) { return completed(xfers) == xfers.size(); });
}

Driven awaitFailure(Transport& transport, int timeoutMs) {
  return pump(transport, timeoutMs, OnFailure::kCarryOn, {},
              [](const Driven& driven) { return !driven.progress.isOk(); });
}

Driven idle(Transport& transport, int ms) {
  return pump(transport, ms, OnFailure::kCarryOn, {}, [](const Driven&) { return false; });
}

int awaitCulprit(Transport& transport, int timeoutMs) {
  const Deadline deadline = Deadline::after(timeoutMs);
  for (;;) {
    const int culprit = transport.findCulprit();
    if (culprit >= 0 || deadline.expired()) return culprit;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::string Exchange::problems() const {
  std::string all;
  for (size_t rank = 0; rank < driven.size(); ++rank) {
    std::string mine = problemsOf(driven[rank]);
    if (!mine.empty()) all += "rank " + std::to_string(rank) + ": " + mine;
    all += traffic[rank].verify();
  }
  return all;
}

Exchange exchange(Cluster& cluster, const std::vector<int>& ranks, const SizesFn& sizes) {
  Exchange result;
  result.traffic = trafficFor(cluster.size());
  result.driven.resize(cluster.size());
  onRankThreads(ranks, [&](int rank) {
    std::vector<int> peers;
    for (int peer : ranks) {
      if (peer != rank) peers.push_back(peer);
    }
    Traffic& mine = result.traffic[rank];
    addExchange(mine, rank, peers, sizes);
    mine.postAll(cluster.at(rank));
    result.driven[rank] = drive(cluster.at(rank), mine.xfers());
  });
  for (int rank = 0; rank < cluster.size(); ++rank) {
    // Ranks outside the exchange have nothing to report.
    if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end())
      result.driven[rank].finished = true;
  }
  return result;
}

std::string smallExchange(Cluster& cluster, const std::vector<int>& ranks) {
  return exchange(cluster, ranks,
                  [](int from, int to) {
                    return std::vector<size_t>{0, 1, 64, 4096,
                                               static_cast<size_t>(100 + from * 10 + to)};
                  })
      .problems();
}

void closeAll(Cluster& cluster, const std::vector<int>& ranks, bool graceful) {
  onRankThreads(ranks, [&](int rank) { cluster.at(rank).close(graceful); });
}

std::string problemsOf(const Driven& driven) {
  std::string problems;
  if (!driven.finished) problems += "did not finish before its deadline; ";
  if (!driven.progress.isOk()) problems += "progress failed: " + driven.progress.message() + "; ";
  if (driven.missedWakeUps > 0) {
    problems += std::to_string(driven.missedWakeUps) +
                " sleeps ran to their cap though progress() had work (waitFd() was quiet); ";
  }
  return problems.empty() ? "" : problems + "\n";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string describe(const Status& status) {
  if (status.isOk()) return "ok";
  return std::to_string(static_cast<int>(status.code())) + ": " + status.message() + "\n";
}

int openFds() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++count;
  }
  return count;
}

}  // namespace weft::test::conformance
