// The PMI-1 client against servers that misbehave, and environments that are wrong: every
// failure is a Status naming the command or variable and quoting what came back, within the
// deadline.
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/pmi1_client.h"
#include "scoped_env.h"
#include "unit/bootstrap/fake_pmi_server.h"

using weft::Deadline;
using weft::Status;
using weft::bootstrap::Pmi1Client;
using weft::bootstrap::Pmi1Endpoint;
using weft::test::answerStartup;
using weft::test::ScriptedPeer;
using weft::test::ServerEnd;

namespace {

constexpr int64_t kTestDeadlineMs = 5000;

Status connectTo(ScriptedPeer& peer, std::unique_ptr<Pmi1Client>* client,
                 int64_t deadlineMs = kTestDeadlineMs) {
  Pmi1Endpoint endpoint;
  endpoint.fd = peer.clientFd();
  endpoint.rank = 0;
  endpoint.size = 1;
  return Pmi1Client::connect(endpoint, Deadline::after(deadlineMs), client);
}

std::unique_ptr<Pmi1Client> startedClient(ScriptedPeer& peer) {
  std::unique_ptr<Pmi1Client> client;
  Status status = connectTo(peer, &client);
  INFO(status.message());
  REQUIRE(status.isOk());
  return client;
}

const std::vector<uint8_t> kValue = {'v'};

}  // namespace

TEST_CASE("A server that closes the connection mid-command fails the call naming it", "[pmi]") {
  ScriptedPeer peer([](ServerEnd& end) {
    answerStartup(end);
    end.readLine();
    end.close();
  });
  auto client = startedClient(peer);
  Status put = client->put("key", kValue, Deadline::after(kTestDeadlineMs));
  CHECK(put.code() == weftRemoteError);
  CHECK_THAT(put.message(), Catch::Contains("cmd=put of key 'key'") &&
                                Catch::Contains("closed the connection before replying"));
  // The conversation cannot be resumed: later calls report the first failure.
  Status barrier = client->barrier(Deadline::after(kTestDeadlineMs));
  CHECK(barrier.code() == weftRemoteError);
  CHECK_THAT(barrier.message(), Catch::Contains("cmd=barrier_in") &&
                                    Catch::Contains("failed earlier") &&
                                    Catch::Contains("cmd=put of key 'key'"));
}

TEST_CASE("A server that closes in the middle of a reply is quoted", "[pmi]") {
  ScriptedPeer peer([](ServerEnd& end) {
    answerStartup(end);
    end.readLine();
    end.send("cmd=barrier_o");
    end.close();
  });
  auto client = startedClient(peer);
  Status barrier = client->barrier(Deadline::after(kTestDeadlineMs));
  CHECK(barrier.code() == weftRemoteError);
  CHECK_THAT(barrier.message(), Catch::Contains("middle of a reply: 'cmd=barrier_o'"));
}

TEST_CASE("rc=1 on get is an error quoting the server and the connection stays usable", "[pmi]") {
  ScriptedPeer peer([](ServerEnd& end) {
    answerStartup(end);
    end.readLine();
    end.send("cmd=get_result rc=1 msg=key_absent_not_found value=unknown\n");
    end.readLine();
    end.send("cmd=get_result rc=0 msg=success value=1/6869\n");
    end.waitForClose();
  });
  auto client = startedClient(peer);
  std::vector<uint8_t> bytes;
  Status missing = client->get("absent", &bytes, Deadline::after(kTestDeadlineMs));
  CHECK(missing.code() == weftRemoteError);
  CHECK_THAT(missing.message(), Catch::Contains("cmd=get of key 'absent'") &&
                                    Catch::Contains("rc=1 msg=key_absent_not_found"));
  REQUIRE(client->get("present", &bytes, Deadline::after(kTestDeadlineMs)).isOk());
  CHECK(std::string(bytes.begin(), bytes.end()) == "hi");
}

TEST_CASE("A reply of the wrong cmd is an error naming both commands", "[pmi]") {
  ScriptedPeer peer([](ServerEnd& end) {
    answerStartup(end);
    end.readLine();
    end.send("cmd=put_result rc=0\n");
    end.waitForClose();
  });
  auto client = startedClient(peer);
  std::vector<uint8_t> bytes;
  Status get = client->get("key", &bytes, Deadline::after(kTestDeadlineMs));
  CHECK(get.code() == weftRemoteError);
  CHECK_THAT(get.message(), Catch::Contains("cmd=get of key 'key'") &&
                                Catch::Contains("expected cmd=get_result") &&
                                Catch::Contains("got cmd=put_result"));
}

TEST_CASE("A garbled reply is an error quoting it", "[pmi]") {
  ScriptedPeer peer([](ServerEnd& end) {
    answerStartup(end);
    end.readLine();
    end.send("hello\x01 world\n");
    end.waitForClose();
  });
  auto client = startedClient(peer);
  Status barrier = client->barrier(Deadline::after(kTestDeadlineMs));
  CHECK(barrier.code() == weftRemoteError);
  CHECK_THAT(barrier.message(),
             Catch::Contains("cmd=barrier_in: garbled reply") && Catch::Contains("'hello? world'"));
}

TEST_CASE("A value that is not the client's layout is refused naming the key", "[pmi]") {
  ScriptedPeer peer([](ServerEnd& end) {
    answerStartup(end);
    end.readLine();
    end.send("cmd=get_result rc=0 msg=success value=plain\n");
    end.readLine();
    end.send("cmd=get_result rc=0 msg=success value=1/zz\n");
    end.waitForClose();
  });
  auto client = startedClient(peer);
  std::vector<uint8_t> bytes;
  Status layout = client->get("foreign", &bytes, Deadline::after(kTestDeadlineMs));
  CHECK(layout.code() == weftRemoteError);
  CHECK_THAT(layout.message(), Catch::Contains("'foreign'") && Catch::Contains("'plain'"));
  Status hex = client->get("nothex", &bytes, Deadline::after(kTestDeadlineMs));
  CHECK(hex.code() == weftRemoteError);
  CHECK_THAT(hex.message(), Catch::Contains("'nothex' is not hex"));
}

TEST_CASE("An overlong reply line is refused", "[pmi]") {
  ScriptedPeer peer([](ServerEnd& end) {
    answerStartup(end);
    end.readLine();
    end.send("cmd=get_result rc=0 value=" + std::string(100000, 'a') + "\n");
    end.waitForClose();
  });
  auto client = startedClient(peer);
  std::vector<uint8_t> bytes;
  Status get = client->get("key", &bytes, Deadline::after(kTestDeadlineMs));
  CHECK(get.code() == weftRemoteError);
  CHECK_THAT(get.message(), Catch::Contains("cmd=get of key 'key'") &&
                                Catch::Contains("longer than") && Catch::Contains("refused"));
}

TEST_CASE("A server that never answers fails at the deadline", "[pmi]") {
  ScriptedPeer peer([](ServerEnd& end) {
    answerStartup(end);
    end.waitForClose();
  });
  auto client = startedClient(peer);
  auto start = std::chrono::steady_clock::now();
  Status barrier = client->barrier(Deadline::after(300));
  auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(barrier.code() == weftTimeout);
  CHECK_THAT(barrier.message(),
             Catch::Contains("cmd=barrier_in") && Catch::Contains("before the deadline"));
  CHECK(elapsed >= std::chrono::milliseconds(250));
  CHECK(elapsed < std::chrono::seconds(3));
}

TEST_CASE("A server silent at init fails the connect at the deadline", "[pmi]") {
  ScriptedPeer peer([](ServerEnd& end) { end.waitForClose(); });
  std::unique_ptr<Pmi1Client> client;
  Status status = connectTo(peer, &client, 200);
  CHECK(status.code() == weftTimeout);
  CHECK_THAT(status.message(), Catch::Contains("cmd=init"));
  CHECK(client == nullptr);
}

TEST_CASE("Init refused with rc != 0 fails the connect quoting the server", "[pmi]") {
  ScriptedPeer peer([](ServerEnd& end) {
    end.readLine();
    end.send("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-2 msg=no_init_for_you\n");
    end.waitForClose();
  });
  std::unique_ptr<Pmi1Client> client;
  Status status = connectTo(peer, &client);
  CHECK(status.code() == weftRemoteError);
  CHECK_THAT(status.message(),
             Catch::Contains("cmd=init failed") && Catch::Contains("rc=-2 msg=no_init_for_you"));
}

TEST_CASE("Unusable maxes from the server are refused", "[pmi]") {
  ScriptedPeer peer([](ServerEnd& end) {
    end.readLine();
    end.send("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n");
    end.readLine();
    end.send("cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=4\n");
    end.waitForClose();
  });
  std::unique_ptr<Pmi1Client> client;
  Status status = connectTo(peer, &client);
  CHECK(status.code() == weftRemoteError);
  CHECK_THAT(status.message(), Catch::Contains("cmd=get_maxes") && Catch::Contains("vallen_max=4"));
}

TEST_CASE("An initack that gives no valid rank is refused quoting the server", "[pmi]") {
  struct Case {
    const char* sets;
    const char* expected;
  };
  const Case cases[] = {
      {"cmd=set size=2\ncmd=set rank=2\ncmd=set debug=0\n", "rank 2 of 2 is not a valid rank"},
      {"cmd=set size=0\ncmd=set rank=0\ncmd=set debug=0\n", "rank 0 of 0 is not a valid rank"},
      {"cmd=set size=two\n", "no integer size="},
      {"cmd=barrier_out\n",
       "expected cmd=set <name>=<value> from the server, got 'cmd=barrier_out'"},
  };
  for (const Case& c : cases) {
    INFO(c.sets);
    std::string sets = c.sets;
    weft::test::ScriptedListener listener([sets](ServerEnd& end) {
      if (!end.readLine()) return;
      end.send("cmd=initack\n" + sets);
      end.waitForClose();
    });
    Pmi1Endpoint endpoint;
    endpoint.port = listener.port();
    endpoint.pmiId = "0";
    std::unique_ptr<Pmi1Client> client;
    Status status = Pmi1Client::connect(endpoint, Deadline::after(kTestDeadlineMs), &client);
    CHECK(status.code() == weftRemoteError);
    CHECK_THAT(status.message(), Catch::Contains("cmd=initack") && Catch::Contains(c.expected));
  }
}

TEST_CASE("Bad PMI_RANK and PMI_SIZE values are named in the error", "[pmi]") {
  struct Case {
    const char* rank;
    const char* size;
    const char* expected;
  };
  const Case cases[] = {
      {"abc", "2", "PMI_RANK='abc' is not a non-negative integer"},
      {"-1", "2", "PMI_RANK='-1' is not a non-negative integer"},
      {"0", "two", "PMI_SIZE='two' is not a non-negative integer"},
      {"0", "0", "PMI_SIZE='0' must be at least 1"},
      {"2", "2", "PMI_RANK='2' is outside [0, PMI_SIZE=2)"},
      {nullptr, "2", "PMI_RANK is not set"},
      {"0", nullptr, "PMI_SIZE is not set"},
  };
  for (const Case& c : cases) {
    INFO("PMI_RANK=" << (c.rank ? c.rank : "(unset)")
                     << " PMI_SIZE=" << (c.size ? c.size : "(unset)"));
    weft::test::ScopedEnv env({{"PMI_FD", "5"},
                               {"PMI_RANK", c.rank},
                               {"PMI_SIZE", c.size},
                               {"PMI_PORT", nullptr},
                               {"PMI_ID", nullptr}});
    Pmi1Endpoint endpoint;
    Status status = weft::bootstrap::readPmi1Environment(&endpoint);
    CHECK(status.code() == weftInvalidArgument);
    CHECK_THAT(status.message(), Catch::Contains(c.expected));
  }
}

TEST_CASE("Bad PMI_FD and PMI_PORT and PMI_ID values are named in the error", "[pmi]") {
  {
    weft::test::ScopedEnv env({{"PMI_FD", "x7"}, {"PMI_PORT", nullptr}});
    Pmi1Endpoint endpoint;
    Status status = weft::bootstrap::readPmi1Environment(&endpoint);
    CHECK_THAT(status.message(), Catch::Contains("PMI_FD='x7'"));
  }
  {
    weft::test::ScopedEnv env({{"PMI_FD", nullptr}, {"PMI_PORT", nullptr}});
    CHECK_FALSE(weft::bootstrap::pmi1Detected());
    Pmi1Endpoint endpoint;
    Status status = weft::bootstrap::readPmi1Environment(&endpoint);
    CHECK(status.code() == weftInvalidUsage);
    CHECK_THAT(status.message(), Catch::Contains("neither PMI_FD nor PMI_PORT"));
  }
  int notSocket = open("/dev/null", O_RDONLY | O_CLOEXEC);
  REQUIRE(notSocket >= 0);
  Pmi1Endpoint endpoint;
  endpoint.fd = notSocket;
  endpoint.rank = 0;
  endpoint.size = 1;
  std::unique_ptr<Pmi1Client> client;
  Status status = Pmi1Client::connect(endpoint, Deadline::after(kTestDeadlineMs), &client);
  CHECK(status.code() == weftInvalidArgument);
  CHECK_THAT(status.message(),
             Catch::Contains("PMI_FD=" + std::to_string(notSocket) + " is not an open socket"));
  ::close(notSocket);

  endpoint = Pmi1Endpoint();
  endpoint.port = "127.0.0.1:1";
  status = Pmi1Client::connect(endpoint, Deadline::after(kTestDeadlineMs), &client);
  CHECK(status.code() == weftInvalidArgument);
  CHECK_THAT(status.message(), Catch::Contains("PMI_ID"));
  endpoint.port = "no port here";
  endpoint.pmiId = "0";
  status = Pmi1Client::connect(endpoint, Deadline::after(kTestDeadlineMs), &client);
  CHECK_FALSE(status.isOk());
  CHECK_THAT(status.message(), Catch::Contains("PMI_PORT"));
}
