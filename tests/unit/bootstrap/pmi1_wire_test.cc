#include "bootstrap/pmi1_wire.h"

#include <catch2/catch.hpp>
#include <numeric>
#include <string>
#include <vector>

namespace pmi1 = weft::bootstrap::pmi1;
using weft::Status;

TEST_CASE("Message parse reads the fields of a Hydra reply", "[pmi]") {
  pmi1::Message message;
  REQUIRE(pmi1::Message::parse("cmd=get_result rc=0 msg=success value=", &message).isOk());
  CHECK(message.command() == "get_result");
  REQUIRE(message.find("rc") != nullptr);
  CHECK(*message.find("rc") == "0");
  REQUIRE(message.find("value") != nullptr);
  CHECK(message.find("value")->empty());
  CHECK(message.find("missing") == nullptr);
  REQUIRE(pmi1::Message::parse("cmd=initack", &message).isOk());
  CHECK(message.fields().size() == 1);
  // A value may hold '=' past the first one; Hydra never sends that, but it must not confuse us.
  REQUIRE(pmi1::Message::parse("cmd=x  a=b=c ", &message).isOk());
  CHECK(*message.find("a") == "b=c");
}

TEST_CASE("Message parse rejects lines without cmd first or with bare words", "[pmi]") {
  pmi1::Message message;
  for (const char* line : {"", "   ", "rc=0 cmd=put_result", "cmd= rc=0", "cmd=put_result rc",
                           "cmd=x =y", "hello world"}) {
    INFO("line '" << line << "'");
    CHECK_FALSE(pmi1::Message::parse(line, &message).isOk());
  }
}

TEST_CASE("formatLine writes one newline-terminated command", "[pmi]") {
  CHECK(pmi1::formatLine("barrier_in", {}) == "cmd=barrier_in\n");
  CHECK(pmi1::formatLine("get", {{"kvsname", "kvs_1"}, {"key", "k"}}) ==
        "cmd=get kvsname=kvs_1 key=k\n");
}

TEST_CASE("Hex encodes every byte value and decodes either case", "[pmi]") {
  std::vector<uint8_t> every(256);
  std::iota(every.begin(), every.end(), 0);
  std::string hex = pmi1::toHex(every);
  CHECK(hex.size() == 512);
  CHECK(hex.substr(0, 6) == "000102");
  CHECK(hex.substr(506) == "fdfeff");
  CHECK(pmi1::isWireSafe(hex));
  std::vector<uint8_t> back;
  REQUIRE(pmi1::fromHex(hex, &back));
  CHECK(back == every);
  REQUIRE(pmi1::fromHex("ABcd", &back));
  CHECK(back == std::vector<uint8_t>{0xab, 0xcd});
  CHECK_FALSE(pmi1::fromHex("abc", &back));
  CHECK_FALSE(pmi1::fromHex("zz", &back));
  CHECK_FALSE(pmi1::fromHex("0x", &back));
}

TEST_CASE("Wire-safe text excludes spaces and equals signs and control characters", "[pmi]") {
  CHECK(pmi1::isWireSafe("kvs_123_0:a/b.c-d#1"));
  CHECK(pmi1::isWireSafe(""));
  for (const char* text : {"a b", "a=b", "a\nb", "a\tb", "\x7f"})
    CHECK_FALSE(pmi1::isWireSafe(text));
  CHECK_FALSE(pmi1::isWireSafe(std::string("a\0b", 3)));
  CHECK(pmi1::quoteLine("a\nb") == "a?b");
  CHECK(pmi1::quoteLine(std::string(200, 'x'), 10) == "xxxxxxxxxx...");
}

TEST_CASE("Values split into chunks that fit and parse back", "[pmi]") {
  std::vector<std::string> chunks;
  std::vector<uint8_t> bytes(100, 0xab);
  // 40 characters per value: 36 hex after the header, 18 bytes a chunk, 6 chunks.
  REQUIRE(pmi1::splitValue("k", bytes, 40, &chunks).isOk());
  REQUIRE(chunks.size() == 6);
  for (const std::string& chunk : chunks) CHECK(chunk.size() <= 40);
  size_t count = 0;
  std::string hex;
  REQUIRE(pmi1::parseFirstChunk("k", chunks[0], &count, &hex).isOk());
  CHECK(count == 6);
  for (size_t i = 1; i < chunks.size(); ++i) hex += chunks[i];
  std::vector<uint8_t> back;
  REQUIRE(pmi1::fromHex(hex, &back));
  CHECK(back == bytes);
  CHECK(pmi1::chunkKey("k", 0) == "k");
  CHECK(pmi1::chunkKey("k", 5) == "k#5");

  REQUIRE(pmi1::splitValue("k", {}, 40, &chunks).isOk());
  CHECK(chunks == std::vector<std::string>{"1/"});
  CHECK_FALSE(pmi1::splitValue("k", bytes, 5, &chunks).isOk());
}

TEST_CASE("The first chunk must carry a chunk count in range", "[pmi]") {
  size_t count = 0;
  std::string hex;
  for (const char* value : {"", "ab", "/ab", "0/ab", "1000/ab", "x/ab", "-1/ab", "1x/ab"}) {
    INFO("value '" << value << "'");
    Status status = pmi1::parseFirstChunk("key", value, &count, &hex);
    CHECK(status.code() == weftRemoteError);
    CHECK_THAT(status.message(), Catch::Contains("'key'"));
  }
  REQUIRE(pmi1::parseFirstChunk("key", "999/", &count, &hex).isOk());
  CHECK(count == 999);
  CHECK(hex.empty());
}
