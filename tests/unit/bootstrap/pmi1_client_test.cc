// The PMI-1 client against a fake Hydra: exchanges among several ranks, the PMI_PORT greeting,
// values of any bytes and length, the environment, and the process-wide client.
#include "bootstrap/pmi1_client.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "scoped_env.h"
#include "unit/bootstrap/fake_pmi_server.h"

using weft::Deadline;
using weft::Status;
using weft::bootstrap::Pmi1Client;
using weft::bootstrap::Pmi1Endpoint;
using weft::test::FakePmiOptions;
using weft::test::FakePmiServer;

namespace {

constexpr int64_t kTestDeadlineMs = 5000;

std::unique_ptr<Pmi1Client> connectOverFd(int fd, int rank, int size) {
  Pmi1Endpoint endpoint;
  endpoint.fd = fd;
  endpoint.rank = rank;
  endpoint.size = size;
  std::unique_ptr<Pmi1Client> client;
  Status connected = Pmi1Client::connect(endpoint, Deadline::after(kTestDeadlineMs), &client);
  INFO(connected.message());
  REQUIRE(connected.isOk());
  return client;
}

std::vector<uint8_t> bytesOf(const std::string& text) {
  return std::vector<uint8_t>(text.begin(), text.end());
}

// Every rank puts its own value, all meet at the barrier, each reads every rank's value.
void exchangeAmong(std::vector<std::unique_ptr<Pmi1Client>>& clients) {
  const int nranks = static_cast<int>(clients.size());
  std::vector<std::vector<std::string>> seen(nranks, std::vector<std::string>(nranks));
  std::vector<std::string> errors(nranks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < nranks; ++rank) {
    threads.emplace_back([&, rank] {
      Pmi1Client& client = *clients[rank];
      Deadline deadline = Deadline::after(kTestDeadlineMs);
      std::string key = "weft.addr:" + std::to_string(client.rank());
      Status status = client.put(key, bytesOf("value of " + std::to_string(rank)), deadline);
      if (status.isOk()) status = client.barrier(deadline);
      for (int peer = 0; peer < nranks && status.isOk(); ++peer) {
        std::vector<uint8_t> bytes;
        status = client.get("weft.addr:" + std::to_string(peer), &bytes, deadline);
        seen[rank][peer] = std::string(bytes.begin(), bytes.end());
      }
      errors[rank] = status.message();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int rank = 0; rank < nranks; ++rank) {
    INFO("rank " << rank);
    CHECK(errors[rank].empty());
    for (int peer = 0; peer < nranks; ++peer) {
      CHECK(seen[rank][peer] == "value of " + std::to_string(clients[peer]->rank()));
    }
  }
}

}  // namespace

TEST_CASE("Three ranks put then meet at the barrier and get each other's values", "[pmi]") {
  FakePmiServer server(3);
  std::vector<std::unique_ptr<Pmi1Client>> clients;
  for (int rank = 0; rank < 3; ++rank) clients.push_back(connectOverFd(server.clientFd(), rank, 3));
  for (int rank = 0; rank < 3; ++rank) {
    CHECK(clients[rank]->rank() == rank);
    CHECK(clients[rank]->size() == 3);
    CHECK(clients[rank]->kvsname() == FakePmiOptions().kvsname);
  }
  exchangeAmong(clients);
  std::vector<std::string> lines = server.received();
  CHECK(std::count(lines.begin(), lines.end(), "cmd=init pmi_version=1 pmi_subversion=1") == 3);
  CHECK(std::count(lines.begin(), lines.end(), "cmd=barrier_in") == 3);
}

TEST_CASE("PMI_PORT clients greet with initack and learn rank and size from the server", "[pmi]") {
  FakePmiServer server(3);
  std::string port = server.listen();
  std::vector<std::unique_ptr<Pmi1Client>> clients(3);
  std::vector<Status> results(3);
  std::vector<std::thread> threads;
  // Connected in reverse, so that the ranks cannot come from the order of arrival.
  for (int id = 2; id >= 0; --id) {
    Pmi1Endpoint endpoint;
    endpoint.port = port;
    endpoint.pmiId = std::to_string(id);
    results[id] = Pmi1Client::connect(endpoint, Deadline::after(kTestDeadlineMs), &clients[id]);
    INFO(results[id].message());
    REQUIRE(results[id].isOk());
    CHECK(clients[id]->rank() == id);
    CHECK(clients[id]->size() == 3);
  }
  exchangeAmong(clients);
  std::vector<std::string> lines = server.received();
  CHECK(std::count(lines.begin(), lines.end(), "cmd=initack pmiid=1") == 1);
}

TEST_CASE("The initack's rank must agree with PMI_RANK when both are given", "[pmi]") {
  FakePmiServer server(2);
  Pmi1Endpoint endpoint;
  endpoint.port = server.listen();
  endpoint.pmiId = "1";
  endpoint.rank = 0;
  std::unique_ptr<Pmi1Client> client;
  Status status = Pmi1Client::connect(endpoint, Deadline::after(kTestDeadlineMs), &client);
  CHECK(status.code() == weftInvalidArgument);
  CHECK_THAT(status.message(), Catch::Contains("rank 1 of 2") && Catch::Contains("PMI_RANK=0"));
}

TEST_CASE("Binary values with every byte value survive the hex round trip", "[pmi]") {
  FakePmiServer server(1);
  auto client = connectOverFd(server.clientFd(), 0, 1);
  Deadline deadline = Deadline::after(kTestDeadlineMs);
  // Every byte value, then the ones the wire itself gives meaning to once more.
  const std::vector<uint8_t> special = {'\n', ' ', '=', '\0', 0xff};
  std::vector<uint8_t> every(256 + special.size());
  std::iota(every.begin(), every.begin() + 256, 0);
  std::copy(special.begin(), special.end(), every.begin() + 256);
  REQUIRE(client->put("every", every, deadline).isOk());
  REQUIRE(client->put("empty", {}, deadline).isOk());
  REQUIRE(client->barrier(deadline).isOk());
  std::vector<uint8_t> back{1, 2, 3};
  REQUIRE(client->get("every", &back, deadline).isOk());
  CHECK(back == every);
  REQUIRE(client->get("empty", &back, deadline).isOk());
  CHECK(back.empty());
  // Hydra's answer for a key nobody put, quoted.
  Status missing = client->get("never-put", &back, deadline);
  CHECK(missing.code() == weftRemoteError);
  CHECK_THAT(missing.message(), Catch::Contains("rc=-1 msg=key_never-put_not_found"));
  for (const auto& [key, value] : server.values()) {
    INFO(key << "=" << value);
    CHECK(weft::bootstrap::pmi1::isWireSafe(value));
  }
}

TEST_CASE("A value longer than vallen_max is split over keys within the server's limits", "[pmi]") {
  FakePmiOptions options;
  options.vallenMax = 64;
  FakePmiServer server(1, options);
  auto client = connectOverFd(server.clientFd(), 0, 1);
  Deadline deadline = Deadline::after(kTestDeadlineMs);
  for (size_t size : {0u, 1u, 29u, 30u, 1000u}) {
    INFO("size " << size);
    std::vector<uint8_t> value(size);
    for (size_t i = 0; i < size; ++i) value[i] = static_cast<uint8_t>(i * 7 + size);
    std::string key = "big" + std::to_string(size);
    REQUIRE(client->put(key, value, deadline).isOk());
    std::vector<uint8_t> back;
    Status got = client->get(key, &back, deadline);
    INFO(got.message());
    REQUIRE(got.isOk());
    CHECK(back == value);
  }
  CHECK_FALSE(server.sawOverlongPut());
  auto values = server.values();
  // 63 characters per value (Hydra keeps vallen_max - 1), less the "<n>/" header: 29 bytes.
  CHECK(values.count("big29") == 1);
  CHECK(values.count("big29#1") == 0);
  CHECK(values.count("big30#1") == 1);
  CHECK(values.count("big30#2") == 0);
  CHECK(values.at("big1000").starts_with("35/"));
  CHECK(values.count("big1000#34") == 1);
}

TEST_CASE("A value too large for the chunk limit is refused naming the key", "[pmi]") {
  FakePmiOptions options;
  options.vallenMax = 16;
  FakePmiServer server(1, options);
  auto client = connectOverFd(server.clientFd(), 0, 1);
  std::vector<uint8_t> value(client->maxValueBytes() + 1);
  Status status = client->put("huge", value, Deadline::after(kTestDeadlineMs));
  CHECK(status.code() == weftInvalidArgument);
  CHECK_THAT(status.message(),
             Catch::Contains("'huge'") && Catch::Contains(std::to_string(value.size()) + " bytes"));
  value.pop_back();
  CHECK(client->put("huge", value, Deadline::after(kTestDeadlineMs)).isOk());
}

TEST_CASE("Keys the wire cannot carry or the server would drop are refused", "[pmi]") {
  FakePmiServer server(1);
  auto client = connectOverFd(server.clientFd(), 0, 1);
  Deadline deadline = Deadline::after(kTestDeadlineMs);
  std::string longest(client->maxKeyChars(), 'k');
  CHECK(client->put(longest, bytesOf("x"), deadline).isOk());
  std::vector<uint8_t> back;
  CHECK(client->get(longest, &back, deadline).isOk());
  for (std::string key : {std::string(""), std::string("a b"), std::string("a=b"),
                          std::string("a#1"), std::string("line\n"), longest + "k"}) {
    INFO("key '" << key << "'");
    Status put = client->put(key, bytesOf("x"), deadline);
    CHECK(put.code() == weftInvalidArgument);
    CHECK_THAT(put.message(), Catch::Contains("PMI-1 key"));
    CHECK(client->get(key, &back, deadline).code() == weftInvalidArgument);
  }
  CHECK_FALSE(server.sawOverlongPut());
}

TEST_CASE("Finalize closes the connection and later calls are usage errors", "[pmi]") {
  FakePmiServer server(1);
  auto client = connectOverFd(server.clientFd(), 0, 1);
  Deadline deadline = Deadline::after(kTestDeadlineMs);
  REQUIRE(client->finalize(deadline).isOk());
  CHECK(client->finalized());
  CHECK(client->finalize(deadline).isOk());
  Status put = client->put("late", bytesOf("x"), deadline);
  CHECK(put.code() == weftInvalidUsage);
  CHECK_THAT(put.message(), Catch::Contains("cmd=put") && Catch::Contains("finalized"));
  CHECK(client->barrier(deadline).code() == weftInvalidUsage);
  std::vector<std::string> lines = server.received();
  CHECK(std::count(lines.begin(), lines.end(), "cmd=finalize") == 1);
}

TEST_CASE("The environment's PMI_FD and PMI_RANK and PMI_SIZE make a working client", "[pmi]") {
  FakePmiServer server(2);
  int fd = server.clientFd();
  std::string fdText = std::to_string(fd);
  weft::test::ScopedEnv env({{"PMI_FD", fdText.c_str()},
                             {"PMI_RANK", "1"},
                             {"PMI_SIZE", "2"},
                             {"PMI_PORT", nullptr},
                             {"PMI_ID", nullptr}});
  CHECK(weft::bootstrap::pmi1Detected());
  Pmi1Endpoint endpoint;
  REQUIRE(weft::bootstrap::readPmi1Environment(&endpoint).isOk());
  CHECK(endpoint.fd == fd);
  std::unique_ptr<Pmi1Client> client;
  REQUIRE(Pmi1Client::connect(endpoint, Deadline::after(kTestDeadlineMs), &client).isOk());
  CHECK(client->rank() == 1);
  CHECK(client->size() == 2);
  // Nothing this process execs may inherit the launcher's connection.
  CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
}

TEST_CASE("The environment's PMI_PORT and PMI_ID make a working client", "[pmi]") {
  FakePmiServer server(1);
  std::string port = server.listen();
  weft::test::ScopedEnv env({{"PMI_FD", nullptr},
                             {"PMI_RANK", nullptr},
                             {"PMI_SIZE", nullptr},
                             {"PMI_PORT", port.c_str()},
                             {"PMI_ID", "0"}});
  Pmi1Endpoint endpoint;
  REQUIRE(weft::bootstrap::readPmi1Environment(&endpoint).isOk());
  std::unique_ptr<Pmi1Client> client;
  REQUIRE(Pmi1Client::connect(endpoint, Deadline::after(kTestDeadlineMs), &client).isOk());
  CHECK(client->rank() == 0);
  CHECK(client->size() == 1);
}

// The process client in a child process, so that its exit is real: it must send cmd=finalize
// once at exit, and a grandchild forked from it (which inherits the atexit handler) must not.
TEST_CASE("The process client is shared and finalizes at exit but not in a forked child", "[pmi]") {
  FakePmiServer server(1);
  // Served only after the fork: a child forked beside running threads trips the leak checker.
  auto [fd, serverFd] = weft::test::socketPair();
  std::string fdText = std::to_string(fd);
  weft::test::ScopedEnv env({{"PMI_FD", fdText.c_str()},
                             {"PMI_RANK", "0"},
                             {"PMI_SIZE", "1"},
                             {"PMI_PORT", nullptr},
                             {"PMI_ID", nullptr}});
  // The child's exit flushes its copy of stdio's buffers: empty them first, or it prints twice.
  std::fflush(nullptr);
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    alarm(10);  // a bug here must not leave the child behind
    Pmi1Client* first = nullptr;
    Pmi1Client* second = nullptr;
    if (!weft::bootstrap::processPmi1Client(Deadline::after(kTestDeadlineMs), &first).isOk()) {
      _exit(10);
    }
    if (!weft::bootstrap::processPmi1Client(Deadline::after(kTestDeadlineMs), &second).isOk() ||
        first != second) {
      _exit(11);
    }
    pid_t grandchild = fork();
    if (grandchild == 0) std::exit(0);
    int grandchildStatus = 0;
    if (grandchild < 0 || waitpid(grandchild, &grandchildStatus, 0) != grandchild) _exit(12);
    std::exit(0);
  }
  ::close(fd);
  server.serveEnd(serverFd);
  int status = 0;
  Deadline deadline = Deadline::after(15000);
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (deadline.expired()) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      FAIL("the child did not exit");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  std::vector<std::string> lines = server.received();
  CHECK(std::count(lines.begin(), lines.end(), "cmd=init pmi_version=1 pmi_subversion=1") == 1);
  CHECK(std::count(lines.begin(), lines.end(), "cmd=finalize") == 1);
}
