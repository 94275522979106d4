// A PMI-1 client of weft's own, so that weft can rendezvous under MPICH's Hydra launcher
// (mpiexec.hydra; Intel MPI's launcher is Hydra too) without linking or loading an MPI library.
// It speaks the text protocol of bootstrap/pmi1_wire.h over the connection Hydra hands each
// process: PMI_FD (an inherited socket) or PMI_PORT (host:port, with PMI_ID for the initack).
//
// One connection per process, initialised once, finalized at exit. That is forced by Hydra
// (mpich 4.0, as observed): after cmd=finalize it closes the connection for good; under PMI_PORT
// a second connection with the same PMI_ID takes the first one's place, whose barrier then never
// returns; and a process that closes the connection without cmd=finalize counts as failed, so
// Hydra kills the whole job. Hence processPmi1Client: every communicator of the process shares
// its client, and it sends cmd=finalize when the process exits normally.
//
// Every call takes a deadline; no read or write waits past it. A connection that failed in
// transport or protocol (closed, garbled, a reply of the wrong cmd, the deadline) cannot be
// resynchronised, so every later call fails with that first error. An rc != 0 reply (a missing
// key, say) leaves the connection usable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "bootstrap/pmi1_wire.h"
#include "net/socket.h"

namespace weft::bootstrap {

// Where the PMI server is and who this process is, as the launcher's environment says.
struct Pmi1Endpoint {
  int fd = -1;        // PMI_FD: a connected socket the launcher passed down (-1: none)
  std::string port;   // PMI_PORT: host:port to connect to when there is no fd
  std::string pmiId;  // PMI_ID: this process's id on PMI_PORT's initack
  int rank = -1;      // PMI_RANK; -1 when unset (PMI_PORT: the initack says)
  int size = 0;       // PMI_SIZE; 0 when unset (PMI_PORT: the initack says)
};

// Whether PMI_FD or PMI_PORT is set (the process runs under a PMI-1 launcher).
bool pmi1Detected();
// Reads PMI_FD, PMI_PORT, PMI_ID, PMI_RANK and PMI_SIZE. Errors name the variable and its value.
Status readPmi1Environment(Pmi1Endpoint* out);

class Pmi1Client {
 public:
  // Connects (PMI_PORT), or takes over the fd once it is known to be a socket (PMI_FD; closed
  // with the client, or at once when the connect fails), then runs the initack (PMI_PORT), init,
  // get_maxes and get_my_kvsname exchanges.
  static Status connect(const Pmi1Endpoint& endpoint, Deadline deadline,
                        std::unique_ptr<Pmi1Client>* out);
  ~Pmi1Client() = default;
  Pmi1Client(const Pmi1Client&) = delete;
  Pmi1Client& operator=(const Pmi1Client&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& kvsname() const { return kvsname_; }
  // The longest key put and get accept: the server's keylen_max less its terminating NUL (Hydra
  // silently drops a key of keylen_max characters) and the chunk suffix.
  size_t maxKeyChars() const;
  // The most bytes one value may hold (split over at most pmi1::kMaxChunks keys).
  size_t maxValueBytes() const;

  // Publishes bytes under key (letters, digits, '_', '-', '.', ':' and '/'). Others see it after
  // the next barrier. Put each key once: whether a second put replaces the first is the
  // server's choice (Hydra 4.0 replaces it, saying rc=0 either way).
  Status put(std::string_view key, std::span<const uint8_t> bytes, Deadline deadline);
  // Collective over every process of the job, in the same order on all of them.
  Status barrier(Deadline deadline);
  // A missing key is weftRemoteError quoting the server's reply; the connection stays usable.
  Status get(std::string_view key, std::vector<uint8_t>* bytes, Deadline deadline);
  // Sends cmd=finalize and closes the connection; every later call is weftInvalidUsage. Calling
  // it again does nothing.
  Status finalize(Deadline deadline);
  bool finalized() const;

 private:
  Pmi1Client() = default;

  Status initialize(const Pmi1Endpoint& endpoint, Deadline deadline);
  Status initack(const Pmi1Endpoint& endpoint, Deadline deadline);
  Status readMaxes(const pmi1::Message& reply);
  Status checkKey(std::string_view key) const;

  // The caller holds mutex_. Sends `request` (a whole line) and reads the reply, which must be
  // cmd=<expected>; rc, when present, must be 0. `what` names the call in errors ("cmd=get of
  // key 'x'"). A transport or protocol failure breaks the connection for good.
  Status exchange(const std::string& request, std::string_view expected, const std::string& what,
                  Deadline deadline, pmi1::Message* reply);
  Status sendLine(const std::string& line, const std::string& what, Deadline deadline);
  Status readLine(const std::string& what, Deadline deadline, std::string* line);
  Status readMessage(const std::string& what, Deadline deadline, pmi1::Message* message);
  Status usable(const std::string& what) const;

  mutable std::mutex mutex_;  // one exchange at a time: replies carry no id to match them by
  net::Socket socket_;
  std::string input_;  // received bytes not yet consumed as a line
  size_t maxLineBytes_ = 0;
  Status broken_;
  bool finalized_ = false;
  int rank_ = -1;
  int size_ = 0;
  std::string kvsname_;
  size_t keylenMax_ = 0;
  size_t vallenMax_ = 0;
};

// The process's one client: the first call reads the environment, connects and initialises,
// and arranges cmd=finalize at exit (in the process that connected only, not in a forked
// child); later calls return the same client, or the first call's error. Never destroyed.
Status processPmi1Client(Deadline deadline, Pmi1Client** out);
// Finalizes the process's client now (nothing when there is none); later processPmi1Client
// calls then fail, since Hydra takes no second connection.
Status finalizeProcessPmi1Client(Deadline deadline);

}  // namespace weft::bootstrap
