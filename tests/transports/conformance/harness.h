// The conformance suite's harness: transports driven directly, below the communicator. A
// Cluster makes one transport per rank, has them listen, hands every rank the others'
// addresses in memory and connects them on one thread per rank, as the wiring does after the
// init allgather. Ranks then run on threads of their own (only a rank's own thread calls into its
// transport, as the contract asks), post Xfers and drive them with a small wait loop modelled on
// the fabric's: poll progress() briefly, then announce the sleep and sleep on waitFd().
//
// Catch2's assertions are not thread-safe, so rank threads only record what they saw (Traffic,
// Driven) and the test thread checks it. Every wait has a deadline.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "transports/conformance/kinds.h"
#include "transports/conformance/traffic.h"
#include "transports/transport.h"

namespace weft::test::conformance {

// Generous hang-guards, never expected to be reached.
constexpr int kConnectMs = 30000;
constexpr int kDriveMs = 60000;

class Cluster {
 public:
  // `members`: the ranks this transport serves (all when empty); the others have none, as when
  // the wiring routes them elsewhere. knobsFor(rank) configures each member.
  Cluster(Kind kind, int nranks, const std::function<Knobs(int)>& knobsFor = nullptr,
          std::vector<int> members = {});
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Every member listens, on this thread; "" or what failed.
  std::string listenAll();
  // Every member connects to the other members on a thread of its own; "" or what failed.
  std::string connectAll(int timeoutMs = kConnectMs);

  int size() const { return nranks_; }
  const std::vector<int>& members() const { return members_; }
  std::vector<int> peersOf(int rank) const;
  Transport& at(int rank) { return *transports_[rank]; }
  // The member's transport itself, for tests that destroy it.
  std::unique_ptr<Transport>& slot(int rank) { return transports_[rank]; }
  const std::string& address(int rank) const { return addresses_[rank]; }
  const std::string& peerName(int rank) const { return names_[rank]; }

 private:
  int nranks_;
  std::vector<int> members_;
  std::vector<std::unique_ptr<Transport>> transports_;
  std::vector<std::string> addresses_;
  std::vector<std::string> names_;
  net::Secret secret_{};
  uint64_t commId_ = 0;
};

// A cluster listened and connected (the test fails where either does); `warmUp`: every two
// members then exchange a few messages, so that the connections carry traffic before a test
// makes anything go wrong.
struct Connected {
  Connected(Kind kind, int nranks, const std::function<Knobs(int)>& knobsFor = nullptr,
            std::vector<int> members = {}, bool warmUp = false);
  Cluster cluster;
};

// Taken before a test's transports exist and checked after they are gone: every descriptor they
// opened is closed again, and (rdma) every verbs object released.
class NothingLeftBehind {
 public:
  explicit NothingLeftBehind(Kind kind);
  void check() const;

 private:
  KindSession session_;
  int fds_;
};

// Runs body(rank) on one thread per listed rank and joins them all.
void onRankThreads(const std::vector<int>& ranks, const std::function<void(int)>& body);

// A barrier for rank threads that gives up at its deadline, so that a rank stuck elsewhere
// cannot hang the others; the test then checks gaveUp().
class TimedBarrier {
 public:
  explicit TimedBarrier(int parties) : parties_(parties) {}
  void wait(int timeoutMs = kConnectMs);
  bool gaveUp() const { return gaveUp_; }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  const int parties_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::atomic<bool> gaveUp_{false};
};

// What driving a transport saw.
struct Driven {
  Status progress;        // the first failure progress() reported (ok: none)
  bool finished = false;  // the awaited condition held before the deadline
  // Sleeps that ran to their cap, after which progress() found work that had been there to wake
  // it: waitFd() was not readable though progress() had something to do.
  int missedWakeUps = 0;
};

enum class OnFailure {
  kCarryOn,   // keep going (a dead peer fails only the transfers with it)
  kAnnounce,  // as the fabric does: announceFailure(findCulprit()), then keep going
};

// Progresses until every transfer is done, or the deadline.
Driven drive(Transport& transport, const std::vector<Xfer*>& xfers, int timeoutMs = kDriveMs,
             OnFailure onFailure = OnFailure::kCarryOn);
// Progresses until progress() reports a failure, or the deadline.
Driven awaitFailure(Transport& transport, int timeoutMs = kDriveMs);
// Progresses (sleeping between) for `ms`, whatever happens.
Driven idle(Transport& transport, int ms);
// Asks findCulprit() until it names someone, or the deadline; -1 then.
int awaitCulprit(Transport& transport, int timeoutMs = kDriveMs);

// One exchange among `ranks`, each on its own thread: everything posted at once, then driven.
struct Exchange {
  std::vector<Traffic> traffic;  // by rank
  std::vector<Driven> driven;
  // "" when every rank finished without a progress failure or a missed wake-up and every
  // transfer verified.
  std::string problems() const;
};
Exchange exchange(Cluster& cluster, const std::vector<int>& ranks, const SizesFn& sizes);
// A few small messages between every two members, to show the connections work.
std::string smallExchange(Cluster& cluster, const std::vector<int>& ranks);
// Each rank closes its transport on its own thread.
void closeAll(Cluster& cluster, const std::vector<int>& ranks, bool graceful);

// "" when `driven` finished without a progress failure or a missed wake-up, else what happened.
std::string problemsOf(const Driven& driven);
bool contains(const std::string& text, const std::string& part);
std::string describe(const Status& status);
// Descriptors this process has open, to show that transports close all of theirs.
int openFds();

}  // namespace weft::test::conformance
