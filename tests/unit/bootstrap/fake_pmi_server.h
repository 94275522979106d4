// Fake PMI-1 servers for the client's tests. FakePmiServer behaves like mpich 4.0's Hydra as
// observed on the wire (replies, missing keys, a key of keylen_max characters dropped and a value
// cut to vallen_max - 1 without a word), for honest exchanges among several ranks. ScriptedPeer
// runs a script on the server end of one connection, for the misbehaving servers. Every wait is
// bounded, so a broken client fails a test instead of hanging it.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/pmi1_wire.h"
#include "net/address.h"
#include "net/socket.h"

namespace weft::test {

// The server end of one connection, read line by line with a bound on every wait.
class ServerEnd {
 public:
  static constexpr int kWaitMs = 5000;

  explicit ServerEnd(int fd) : fd_(fd) {}
  ~ServerEnd() { close(); }

  // The next line without its newline, or nullopt when the client closed (or kWaitMs passed).
  std::optional<std::string> readLine() {
    while (true) {
      size_t newline = input_.find('\n');
      if (newline != std::string::npos) {
        std::string line = input_.substr(0, newline);
        input_.erase(0, newline + 1);
        return line;
      }
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, kWaitMs) <= 0) return std::nullopt;
      char buffer[4096];
      ssize_t n = recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) return std::nullopt;
      input_.append(buffer, static_cast<size_t>(n));
    }
  }
  void send(const std::string& text) {
    size_t done = 0;
    while (done < text.size()) {
      ssize_t n = ::send(fd_, text.data() + done, text.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }
  // Waits until the client closes its end (or kWaitMs passes): a server that never answers.
  void waitForClose() {
    while (readLine()) {
    }
  }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  // Wakes a thread blocked in readLine (poll sees the hang-up).
  void shutdown() {
    if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
  }

 private:
  int fd_;
  std::string input_;
};

// A connected socketpair: [0] for the client under test, [1] for the fake server.
inline std::pair<int, int> socketPair() {
  int fds[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
  return {fds[0], fds[1]};
}

struct FakePmiOptions {
  int keylenMax = 64;
  int vallenMax = 1024;
  std::string kvsname = "kvs_4242_0_12345_fake";
};

class FakePmiServer {
 public:
  // Socketpairs for `nranks` ranks (clientFd); or, after listen(), connections over loopback
  // that greet with cmd=initack pmiid=<rank>.
  explicit FakePmiServer(int nranks, FakePmiOptions options = {})
      : nranks_(nranks), options_(std::move(options)) {}
  ~FakePmiServer() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      for (ServerEnd* end : ends_) end->shutdown();
    }
    barrierChanged_.notify_all();
    // The listener adds serving threads; once it is gone, threads_ no longer changes.
    if (listenerThread_.joinable()) listenerThread_.join();
    for (std::thread& thread : threads_) thread.join();
  }

  // The client's end of a new socketpair connection, served on a thread of its own.
  int clientFd() {
    auto [client, server] = socketPair();
    serveEnd(server);
    return client;
  }
  // Serves the server end of a connection the caller made (say, before a fork that must not
  // copy the serving thread's state).
  void serveEnd(int serverFd) {
    std::lock_guard<std::mutex> lock(mutex_);
    threads_.emplace_back([this, serverFd] { serve(serverFd); });
  }
  // Accepts `nranks` connections on a loopback port; returns "127.0.0.1:<port>".
  std::string listen() {
    net::SocketAddress any, bound;
    REQUIRE(net::SocketAddress::parse("127.0.0.1:0", &any).isOk());
    REQUIRE(net::listenOn(any, nranks_, &listener_, &bound).isOk());
    listenerThread_ = std::thread([this] {
      Deadline giveUp = Deadline::after(ServerEnd::kWaitMs);
      for (int accepted = 0; accepted < nranks_ && !giveUp.expired();) {
        net::Socket connection;
        // Short slices, so that the destructor need not wait out the whole bound.
        if (!net::acceptOne(listener_, Deadline::after(50), &connection, nullptr).isOk()) {
          std::lock_guard<std::mutex> lock(mutex_);
          if (stopping_) return;
          continue;
        }
        int fd = connection.release();
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) {
          ::close(fd);
          return;
        }
        threads_.emplace_back([this, fd] { serve(fd); });
        ++accepted;
      }
    });
    return bound.toString();
  }

  std::map<std::string, std::string> values() {
    std::lock_guard<std::mutex> lock(mutex_);
    return kvs_;
  }
  // Every line the server received, over all connections.
  std::vector<std::string> received() {
    std::lock_guard<std::mutex> lock(mutex_);
    return received_;
  }
  // Whether a put came that Hydra would have cut or dropped.
  bool sawOverlongPut() {
    std::lock_guard<std::mutex> lock(mutex_);
    return overlongPut_;
  }

 private:
  void serve(int fd) {
    ServerEnd end(fd);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
      ends_.push_back(&end);
    }
    while (auto line = end.readLine()) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        received_.push_back(*line);
      }
      std::optional<std::string> reply = answer(*line);
      if (!reply) break;  // Hydra ends the job on a command it cannot parse or serve
      end.send(*reply);
      if (reply->starts_with("cmd=finalize_ack")) break;  // and closes after finalize
    }
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase(ends_, &end);
  }

  std::optional<std::string> answer(const std::string& line) {
    bootstrap::pmi1::Message message;
    if (!bootstrap::pmi1::Message::parse(line, &message).isOk()) return std::nullopt;
    const std::string& cmd = message.command();
    auto field = [&](const char* key) {
      const std::string* value = message.find(key);
      return value ? *value : std::string();
    };
    if (cmd == "initack") {
      return "cmd=initack\ncmd=set size=" + std::to_string(nranks_) +
             "\ncmd=set rank=" + field("pmiid") + "\ncmd=set debug=0\n";
    }
    if (cmd == "init") return "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n";
    if (cmd == "get_maxes") {
      return "cmd=maxes kvsname_max=256 keylen_max=" + std::to_string(options_.keylenMax) +
             " vallen_max=" + std::to_string(options_.vallenMax) + "\n";
    }
    if (cmd == "get_my_kvsname") return "cmd=my_kvsname kvsname=" + options_.kvsname + "\n";
    if (cmd == "finalize") return std::string("cmd=finalize_ack\n");
    if (cmd == "barrier_in") return barrier();
    if (field("kvsname") != options_.kvsname) return std::nullopt;
    std::lock_guard<std::mutex> lock(mutex_);
    std::string key = field("key");
    if (cmd == "put") {
      std::string value = field("value");
      size_t keep = static_cast<size_t>(options_.vallenMax) - 1;
      if (key.size() >= static_cast<size_t>(options_.keylenMax) || value.size() > keep) {
        overlongPut_ = true;
      }
      if (key.size() < static_cast<size_t>(options_.keylenMax)) kvs_[key] = value.substr(0, keep);
      return std::string("cmd=put_result rc=0 msg=success\n");
    }
    if (cmd == "get") {
      auto found = kvs_.find(key);
      if (found == kvs_.end()) {
        return "cmd=get_result rc=-1 msg=key_" + key + "_not_found value=unknown\n";
      }
      return "cmd=get_result rc=0 msg=success value=" + found->second + "\n";
    }
    return std::nullopt;
  }

  std::optional<std::string> barrier() {
    std::unique_lock<std::mutex> lock(mutex_);
    uint64_t generation = barrierGeneration_;
    if (++barrierArrived_ == nranks_) {
      barrierArrived_ = 0;
      ++barrierGeneration_;
      barrierChanged_.notify_all();
    } else {
      barrierChanged_.wait(lock, [&] { return barrierGeneration_ != generation || stopping_; });
      if (barrierGeneration_ == generation) return std::nullopt;
    }
    return std::string("cmd=barrier_out\n");
  }

  const int nranks_;
  const FakePmiOptions options_;
  net::Socket listener_;
  std::mutex mutex_;
  std::condition_variable barrierChanged_;
  bool stopping_ = false;
  int barrierArrived_ = 0;
  uint64_t barrierGeneration_ = 0;
  std::map<std::string, std::string> kvs_;
  std::vector<std::string> received_;
  bool overlongPut_ = false;
  std::vector<ServerEnd*> ends_;
  std::thread listenerThread_;
  std::vector<std::thread> threads_;  // one per connection; added under mutex_
};

// Runs `script` on the server end of a socketpair; the client end is clientFd().
class ScriptedPeer {
 public:
  explicit ScriptedPeer(std::function<void(ServerEnd&)> script) {
    auto [client, server] = socketPair();
    client_ = client;
    thread_ = std::thread([script = std::move(script), server = server] {
      ServerEnd end(server);
      script(end);
    });
  }
  ~ScriptedPeer() {
    if (client_ >= 0) ::close(client_);
    thread_.join();
  }
  // Ownership passes to the caller (the client under test closes it).
  int clientFd() {
    int fd = client_;
    client_ = -1;
    return fd;
  }

 private:
  int client_ = -1;
  std::thread thread_;
};

// Runs `script` on the first connection to a loopback port (the PMI_PORT path).
class ScriptedListener {
 public:
  explicit ScriptedListener(std::function<void(ServerEnd&)> script) {
    net::SocketAddress any;
    REQUIRE(net::SocketAddress::parse("127.0.0.1:0", &any).isOk());
    REQUIRE(net::listenOn(any, 1, &listener_, &bound_).isOk());
    thread_ = std::thread([this, script = std::move(script)] {
      net::Socket connection;
      if (!net::acceptOne(listener_, Deadline::after(ServerEnd::kWaitMs), &connection, nullptr)
               .isOk()) {
        return;
      }
      ServerEnd end(connection.release());
      script(end);
    });
  }
  ~ScriptedListener() { thread_.join(); }
  std::string port() const { return bound_.toString(); }

 private:
  net::Socket listener_;
  net::SocketAddress bound_;
  std::thread thread_;
};

// Hydra's answers to the start-up exchanges (init, get_maxes, get_my_kvsname).
inline void answerStartup(ServerEnd& end, int vallenMax = 1024) {
  if (!end.readLine()) return;
  end.send("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n");
  if (!end.readLine()) return;
  end.send("cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=" + std::to_string(vallenMax) +
           "\n");
  if (!end.readLine()) return;
  end.send("cmd=my_kvsname kvsname=kvs_1_0_1_fake\n");
}

}  // namespace weft::test
