// How the bootstrap grows with the number of ranks: a real rendezvous root (RootServer) in this
// process and N ranks in forked child processes, all on loopback. Bootstrap only, no data path.
//
//   bootstrap_scale [--mode root|full] [--ranks 64,256,...] [--repeat 3] [--procs 2]
//                   [--threads 2] [--timeout-s 300]
//
// --mode root: the root's clients only. Each child runs --threads threads, each of which joins
//   its share of the ranks one after another with the real wire protocol (connect,
//   authenticate, join) and then reads every reply to the end. One socket per rank, so 8192
//   ranks fit the fd limit, and no thread per rank. Measures the root alone.
// --mode full: the real Bootstrap::create (rendezvous, ring connect, whatever else create does)
//   on one thread per rank, then one bootstrap allgather of a description-sized block. Thread
//   per rank because create blocks; keep N to a few thousand on a small machine.
//
// Columns (median of --repeat trials, milliseconds from the moment the root is listening):
//   ready:     the last rank done (root mode: its reply read to the end; full: create returned)
//   allgather: full mode only: from the last create returning to the last allgather returning
//   root KiB:  root mode only: bytes the root sent after the joins (its replies), all ranks
// Every rank describes itself with an encoded PeerInfo, the size the communicator sends.
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "bootstrap/peer_info.h"
#include "bootstrap/rendezvous_wire.h"
#include "bootstrap/root_server.h"
#include "bootstrap/unique_id.h"
#include "net/auth.h"
#include "net/socket.h"

namespace {

using namespace weft;
using Clock = std::chrono::steady_clock;

struct Options {
  bool full = false;
  std::vector<int> ranks = {64, 256, 1024, 4096, 8192};
  int repeat = 3;
  int procs = 2;
  int threads = 2;
  int timeoutS = 300;
};

// What one child reports back through its pipe.
struct ChildResult {
  int64_t readyNs = 0;      // steady-clock time the child's last rank was ready
  int64_t gatheredNs = 0;   // ... and finished its allgather (full mode)
  uint64_t replyBytes = 0;  // bytes read from the root after the joins (root mode)
  int failed = 0;
  char firstError[240] = {};
};

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

std::string description(int rank) {
  PeerInfo info;
  info.rank = rank;
  info.hostId = 0x1234567890abcdefull + static_cast<uint64_t>(rank / 8);
  info.machineId = info.hostId;
  info.pid = 100000 + rank;
  info.startTicks = 123456789;
  info.cores = 64;
  char host[32];
  std::snprintf(host, sizeof(host), "node-%05d.cluster.local", rank / 8);
  info.hostName = host;
  return encodePeerInfo(info);
}

void noteFailure(ChildResult* result, const std::string& what) {
  if (result->failed++ == 0)
    std::snprintf(result->firstError, sizeof(result->firstError), "%s", what.c_str());
}

// One simulated rank's join; the rest of the rendezvous is the root's and the reply's.
Status join(const bootstrap::UniqueIdContents& id, int rank, int nranks, Deadline deadline,
            net::Socket* root) {
  WEFT_TRY(net::connectTo(id.root, deadline, root));
  WEFT_TRY(net::authenticateClient(root->fd(), id.secret, net::Purpose::kRendezvous, 0, deadline));
  bootstrap::rendezvous::JoinHeader header;
  header.rank = static_cast<uint32_t>(rank);
  header.nranks = static_cast<uint32_t>(nranks);
  // Nobody connects to it in this mode; any valid address will do.
  header.ring = net::SocketAddress::any(AF_INET, static_cast<uint16_t>(10000 + rank % 50000));
  return bootstrap::rendezvous::sendJoin(root->fd(), header, deadline);
}

// Reads the reply to the end (the root closes after it); a success reply starts with byte 0.
Status drainReply(int fd, Deadline deadline, uint64_t* bytes) {
  std::vector<uint8_t> buffer(1 << 16);
  bool first = true;
  while (true) {
    ssize_t n = recv(fd, buffer.data(), buffer.size(), 0);
    if (n == 0) return Status::ok();
    if (n > 0) {
      if (first && buffer[0] != 0) return remoteError("the root answered with a failure");
      first = false;
      *bytes += static_cast<uint64_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return systemError("recv", errno);
    if (!net::waitFor(fd, POLLIN, deadline)) return timeoutError("reading the reply");
  }
}

void runRootClients(const Options& options, const bootstrap::UniqueIdContents& id, int nranks,
                    const std::vector<int>& mine, ChildResult* result) {
  Deadline deadline = Deadline::after(options.timeoutS * 1000);
  std::vector<ChildResult> perThread(static_cast<size_t>(options.threads));
  std::vector<std::thread> threads;
  for (int t = 0; t < options.threads; ++t) {
    threads.emplace_back([&, t] {
      ChildResult& out = perThread[t];
      std::vector<std::pair<int, net::Socket>> sockets;
      for (size_t i = t; i < mine.size(); i += options.threads) {
        net::Socket root;
        Status status = join(id, mine[i], nranks, deadline, &root);
        if (!status.isOk()) noteFailure(&out, status.message());
        sockets.emplace_back(mine[i], std::move(root));
      }
      for (auto& [rank, root] : sockets) {
        if (!root.isOpen()) continue;
        Status status = drainReply(root.fd(), deadline, &out.replyBytes);
        if (!status.isOk())
          noteFailure(&out, "rank " + std::to_string(rank) + ": " + status.message());
      }
      out.readyNs = nowNs();
    });
  }
  for (auto& thread : threads) thread.join();
  for (const ChildResult& out : perThread) {
    result->readyNs = std::max(result->readyNs, out.readyNs);
    result->replyBytes += out.replyBytes;
    if (out.failed > 0 && result->failed == 0)
      std::memcpy(result->firstError, out.firstError, sizeof(out.firstError));
    result->failed += out.failed;
  }
}

void runFullRanks(const Options& options, const bootstrap::UniqueIdContents& id, int nranks,
                  const std::vector<int>& mine, ChildResult* result) {
  Deadline deadline = Deadline::after(options.timeoutS * 1000);
  const size_t blockBytes = description(0).size();
  std::vector<ChildResult> perRank(mine.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < mine.size(); ++i) {
    threads.emplace_back([&, i] {
      ChildResult& out = perRank[i];
      std::unique_ptr<bootstrap::Bootstrap> boot;
      Status status =
          bootstrap::Bootstrap::create(id, mine[i], nranks, description(mine[i]), deadline, &boot);
      out.readyNs = nowNs();
      if (status.isOk()) {
        std::vector<uint8_t> block(blockBytes, static_cast<uint8_t>(mine[i]));
        std::vector<uint8_t> all(blockBytes * static_cast<size_t>(nranks));
        status = boot->allgather(block.data(), blockBytes, all.data(), deadline);
      }
      out.gatheredNs = nowNs();
      if (!status.isOk()) noteFailure(&out, status.message());
    });
  }
  for (auto& thread : threads) thread.join();
  for (const ChildResult& out : perRank) {
    result->readyNs = std::max(result->readyNs, out.readyNs);
    result->gatheredNs = std::max(result->gatheredNs, out.gatheredNs);
    if (out.failed > 0 && result->failed == 0)
      std::memcpy(result->firstError, out.firstError, sizeof(out.firstError));
    result->failed += out.failed;
  }
}

struct Trial {
  double readyMs = 0;
  double allgatherMs = 0;
  uint64_t replyBytes = 0;
  bool ok = false;
};

// Children are forked before the root's thread exists; each waits for the root's address on
// its pipe, runs its ranks (rank % procs == child) and writes a ChildResult back.
Trial runTrial(const Options& options, int nranks) {
  const int procs = std::min(options.procs, nranks);
  std::vector<int> toChild(procs), fromChild(procs);
  std::vector<pid_t> pids(procs);
  for (int c = 0; c < procs; ++c) {
    int down[2], up[2];
    if (pipe(down) != 0 || pipe(up) != 0) std::abort();
    pids[c] = fork();
    if (pids[c] == 0) {
      close(down[1]);
      close(up[0]);
      bootstrap::UniqueIdContents id;
      weftUniqueId raw;
      if (read(down[0], &raw, sizeof(raw)) != sizeof(raw)) _exit(2);
      if (!bootstrap::decodeUniqueId(raw, &id).isOk()) _exit(2);
      std::vector<int> mine;
      for (int r = c; r < nranks; r += procs) mine.push_back(r);
      ChildResult result;
      if (options.full) {
        runFullRanks(options, id, nranks, mine, &result);
      } else {
        runRootClients(options, id, nranks, mine, &result);
      }
      if (write(up[1], &result, sizeof(result)) != sizeof(result)) _exit(3);
      _exit(0);
    }
    close(down[0]);
    close(up[1]);
    toChild[c] = down[1];
    fromChild[c] = up[0];
  }

  bootstrap::UniqueIdContents id;
  if (!net::randomBytes(id.secret.data(), id.secret.size()).isOk()) std::abort();
  net::SocketAddress any;
  if (!net::SocketAddress::parse("127.0.0.1:0", &any).isOk()) std::abort();
  std::shared_ptr<bootstrap::RootServer> server;
  Status started = bootstrap::RootServer::start(any, id.secret,
                                                Deadline::after(options.timeoutS * 1000), &server);
  if (!started.isOk()) {
    std::fprintf(stderr, "root: %s\n", started.message().c_str());
    std::exit(1);
  }
  id.root = server->address();
  weftUniqueId raw;
  bootstrap::encodeUniqueId(id, &raw);
  const int64_t startNs = nowNs();
  for (int c = 0; c < procs; ++c) {
    if (write(toChild[c], &raw, sizeof(raw)) != sizeof(raw)) std::abort();
    close(toChild[c]);
  }

  Trial trial;
  trial.ok = true;
  ChildResult total;
  for (int c = 0; c < procs; ++c) {
    ChildResult result;
    if (read(fromChild[c], &result, sizeof(result)) != sizeof(result)) {
      trial.ok = false;
      std::fprintf(stderr, "N=%d: child %d reported nothing\n", nranks, c);
    }
    close(fromChild[c]);
    int status = 0;
    waitpid(pids[c], &status, 0);
    total.readyNs = std::max(total.readyNs, result.readyNs);
    total.gatheredNs = std::max(total.gatheredNs, result.gatheredNs);
    total.replyBytes += result.replyBytes;
    if (result.failed > 0) {
      trial.ok = false;
      std::fprintf(stderr, "N=%d: %d ranks failed, e.g. %s\n", nranks, result.failed,
                   result.firstError);
    }
  }
  server->stop();
  trial.readyMs = double(total.readyNs - startNs) / 1e6;
  trial.allgatherMs = double(total.gatheredNs - total.readyNs) / 1e6;
  trial.replyBytes = total.replyBytes;
  return trial;
}

std::vector<int> parseList(const char* text) {
  std::vector<int> values;
  for (const char* p = text; *p != '\0';) {
    values.push_back(std::atoi(p));
    const char* comma = std::strchr(p, ',');
    if (comma == nullptr) break;
    p = comma + 1;
  }
  return values;
}

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--mode") {
      options.full = std::string(value) == "full";
    } else if (flag == "--ranks") {
      options.ranks = parseList(value);
    } else if (flag == "--repeat") {
      options.repeat = std::max(1, std::atoi(value));
    } else if (flag == "--procs") {
      options.procs = std::max(1, std::atoi(value));
    } else if (flag == "--threads") {
      options.threads = std::max(1, std::atoi(value));
    } else if (flag == "--timeout-s") {
      options.timeoutS = std::max(1, std::atoi(value));
    } else {
      std::fprintf(stderr, "unknown flag %s (see the comment at the top of bootstrap_scale.cc)\n",
                   flag.c_str());
      std::exit(2);
    }
  }
  return options;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Options options = parse(argc, argv);
  setenv("WEFT_SOCKET_IFNAME", "lo", 0);  // the ring listeners, in full mode
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  std::printf(
      "# bootstrap_scale: mode %s, %d child processes%s, description %zu bytes, "
      "fd limit %llu, median of %d\n",
      options.full ? "full (Bootstrap::create, thread per rank)" : "root (simulated clients)",
      options.procs,
      options.full ? "" : (" x " + std::to_string(options.threads) + " threads").c_str(),
      description(0).size(), static_cast<unsigned long long>(files.rlim_cur), options.repeat);
  std::printf("%8s %12s %14s %14s %10s\n", "N", "ready ms", "allgather ms", "root KiB", "ms/rank");
  for (int nranks : options.ranks) {
    std::vector<double> ready, gathered;
    uint64_t bytes = 0;
    bool ok = true;
    for (int trial = 0; trial < options.repeat; ++trial) {
      Trial result = runTrial(options, nranks);
      ok = ok && result.ok;
      ready.push_back(result.readyMs);
      gathered.push_back(result.allgatherMs);
      bytes = result.replyBytes;
    }
    char allgather[32] = "-", rootKiB[32] = "-";
    if (options.full) std::snprintf(allgather, sizeof(allgather), "%.1f", median(gathered));
    if (!options.full) std::snprintf(rootKiB, sizeof(rootKiB), "%.1f", double(bytes) / 1024);
    std::printf("%8d %12.1f %14s %14s %10.4f%s\n", nranks, median(ready), allgather, rootKiB,
                median(ready) / nranks, ok ? "" : "  FAILED");
    std::fflush(stdout);
  }
  return 0;
}
