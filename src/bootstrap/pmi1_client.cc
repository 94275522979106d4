#include "bootstrap/pmi1_client.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>

#include "base/log.h"
#include "net/address.h"

namespace weft::bootstrap {
namespace {

// Replies before get_maxes are a few dozen bytes; afterwards the cap follows the maxes.
constexpr size_t kFirstLineCap = 4096;
// What a reply adds around its kvsname, key and value ("cmd=get_result rc=0 msg=... value=").
constexpr size_t kLineOverheadBytes = 1024;
// Maxes beyond this are no server's real limits but garbage, and would inflate the line cap.
constexpr int64_t kMaxesCeiling = 1 << 20;
// A value must carry at least a few bytes per key beyond the chunk header.
constexpr int64_t kMinVallenMax = 16;
constexpr int64_t kMinKeylenMax = 8;
constexpr size_t kReadChunkBytes = 4096;
// Hydra sends three cmd=set lines after the initack; a server that sends many more is broken.
constexpr int kMaxSetLines = 16;
constexpr int64_t kMaxRanks = INT32_MAX;

std::string command(std::string_view name) {
  return "cmd=" + std::string(name);
}

Status parseNumber(const pmi1::Message& reply, std::string_view key, const std::string& what,
                   int64_t* out) {
  const std::string* text = reply.find(key);
  int64_t value = 0;
  if (text != nullptr) {
    auto result = std::from_chars(text->data(), text->data() + text->size(), value);
    if (result.ec == std::errc() && result.ptr == text->data() + text->size()) {
      *out = value;
      return Status::ok();
    }
  }
  return remoteError("PMI-1 " + what + ": the reply has no integer " + std::string(key) + "=");
}

bool isKeyCharacter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.' || c == ':' || c == '/';
}

}  // namespace

Status Pmi1Client::connect(const Pmi1Endpoint& endpoint, Deadline deadline,
                           std::unique_ptr<Pmi1Client>* out) {
  std::unique_ptr<Pmi1Client> client(new Pmi1Client());
  std::lock_guard<std::mutex> lock(client->mutex_);
  WEFT_TRY(client->initialize(endpoint, deadline));
  *out = std::move(client);
  return Status::ok();
}

Status Pmi1Client::initialize(const Pmi1Endpoint& endpoint, Deadline deadline) {
  maxLineBytes_ = kFirstLineCap;
  rank_ = endpoint.rank;
  size_ = endpoint.size;
  if (endpoint.fd >= 0) {
    struct stat info {};
    if (fstat(endpoint.fd, &info) != 0 || !S_ISSOCK(info.st_mode)) {
      return invalidArgument("PMI_FD=" + std::to_string(endpoint.fd) + " is not an open socket");
    }
    socket_ = net::Socket(endpoint.fd);
    WEFT_TRY(net::setNonBlocking(socket_.fd()));
    // A program this process execs must not inherit the connection: it could hold it open past
    // this process's end, which Hydra watches for, or write on it.
    if (fcntl(socket_.fd(), F_SETFD, FD_CLOEXEC) != 0) {
      return systemError("fcntl(FD_CLOEXEC) on PMI_FD=" + std::to_string(endpoint.fd), errno);
    }
  } else if (!endpoint.port.empty()) {
    if (endpoint.pmiId.empty() || !pmi1::isWireSafe(endpoint.pmiId)) {
      return invalidArgument("PMI_ID='" + pmi1::quoteLine(endpoint.pmiId) +
                             "' must be set to a plain token with PMI_PORT");
    }
    net::SocketAddress address;
    WEFT_TRY(net::SocketAddress::parse(endpoint.port, &address).withContext("PMI_PORT"));
    WEFT_TRY(net::connectTo(address, deadline, &socket_)
                 .withContext("PMI-1: connecting to PMI_PORT=" + endpoint.port));
    WEFT_TRY(initack(endpoint, deadline));
  } else {
    return invalidUsage("PMI-1: neither PMI_FD nor PMI_PORT is set");
  }
  if (size_ < 1 || rank_ < 0 || rank_ >= size_) {
    return invalidArgument("PMI-1: rank " + std::to_string(rank_) + " of size " +
                           std::to_string(size_) + " is not a valid rank");
  }

  pmi1::Message reply;
  WEFT_TRY(exchange(pmi1::formatLine("init", {{"pmi_version", "1"}, {"pmi_subversion", "1"}}),
                    "response_to_init", "cmd=init", deadline, &reply));
  const std::string* version = reply.find("pmi_version");
  if (version == nullptr || *version != "1") {
    return remoteError("PMI-1 cmd=init: the server does not speak PMI version 1: '" +
                       pmi1::quoteLine(version ? *version : "(none)") + "'");
  }
  WEFT_TRY(exchange(pmi1::formatLine("get_maxes", {}), "maxes", "cmd=get_maxes", deadline, &reply));
  WEFT_TRY(readMaxes(reply));
  WEFT_TRY(exchange(pmi1::formatLine("get_my_kvsname", {}), "my_kvsname", "cmd=get_my_kvsname",
                    deadline, &reply));
  const std::string* kvsname = reply.find("kvsname");
  if (kvsname == nullptr || kvsname->empty() || !pmi1::isWireSafe(*kvsname)) {
    return remoteError("PMI-1 cmd=get_my_kvsname: the reply names no kvsname");
  }
  kvsname_ = *kvsname;
  WEFT_INFO("PMI-1: rank %d of %d, kvsname %s, keylen_max %zu, vallen_max %zu", rank_, size_,
            kvsname_.c_str(), keylenMax_, vallenMax_);
  return Status::ok();
}

// PMI_PORT's greeting: cmd=initack pmiid=<PMI_ID>, answered by cmd=initack and three unsolicited
// lines cmd=set size=N, cmd=set rank=R, cmd=set debug=D.
Status Pmi1Client::initack(const Pmi1Endpoint& endpoint, Deadline deadline) {
  pmi1::Message reply;
  const std::string what = "cmd=initack";
  WEFT_TRY(exchange(pmi1::formatLine("initack", {{"pmiid", endpoint.pmiId}}), "initack", what,
                    deadline, &reply));
  int64_t serverRank = -1, serverSize = -1;
  bool sawRank = false, sawSize = false, sawDebug = false;
  for (int lines = 0; !(sawRank && sawSize && sawDebug); ++lines) {
    std::string line;
    pmi1::Message set;
    if (lines == kMaxSetLines) {
      return remoteError("PMI-1 cmd=initack: " + std::to_string(lines) +
                         " cmd=set lines without all of size, rank and debug");
    }
    WEFT_TRY(readLine(what, deadline, &line));
    if (!pmi1::Message::parse(line, &set).isOk() || set.command() != "set" ||
        set.fields().size() != 2) {
      return remoteError(
          "PMI-1 cmd=initack: expected cmd=set <name>=<value> from the server, got '" +
          pmi1::quoteLine(line) + "'");
    }
    const std::string& name = set.fields()[1].key;
    if (name == "size") {
      WEFT_TRY(parseNumber(set, "size", what, &serverSize));
      sawSize = true;
    } else if (name == "rank") {
      WEFT_TRY(parseNumber(set, "rank", what, &serverRank));
      sawRank = true;
    } else if (name == "debug") {
      sawDebug = true;
    }
  }
  if (serverSize < 1 || serverSize > kMaxRanks || serverRank < 0 || serverRank >= serverSize) {
    return remoteError("PMI-1 cmd=initack: the server's rank " + std::to_string(serverRank) +
                       " of " + std::to_string(serverSize) + " is not a valid rank");
  }
  std::string given;
  if (endpoint.rank >= 0 && endpoint.rank != serverRank) {
    given = "PMI_RANK=" + std::to_string(endpoint.rank);
  }
  if (endpoint.size > 0 && endpoint.size != serverSize) {
    given += (given.empty() ? "" : " and ") + ("PMI_SIZE=" + std::to_string(endpoint.size));
  }
  if (!given.empty()) {
    return invalidArgument("PMI-1 cmd=initack: the server says rank " + std::to_string(serverRank) +
                           " of " + std::to_string(serverSize) + ", but " + given);
  }
  rank_ = static_cast<int>(serverRank);
  size_ = static_cast<int>(serverSize);
  return Status::ok();
}

Status Pmi1Client::readMaxes(const pmi1::Message& reply) {
  int64_t kvsnameMax = 0, keylenMax = 0, vallenMax = 0;
  const std::string what = "cmd=get_maxes";
  WEFT_TRY(parseNumber(reply, "kvsname_max", what, &kvsnameMax));
  WEFT_TRY(parseNumber(reply, "keylen_max", what, &keylenMax));
  WEFT_TRY(parseNumber(reply, "vallen_max", what, &vallenMax));
  if (kvsnameMax < 1 || kvsnameMax > kMaxesCeiling || keylenMax < kMinKeylenMax ||
      keylenMax > kMaxesCeiling || vallenMax < kMinVallenMax || vallenMax > kMaxesCeiling) {
    return remoteError(
        "PMI-1 cmd=get_maxes: unusable limits kvsname_max=" + std::to_string(kvsnameMax) +
        " keylen_max=" + std::to_string(keylenMax) + " vallen_max=" + std::to_string(vallenMax));
  }
  keylenMax_ = static_cast<size_t>(keylenMax);
  vallenMax_ = static_cast<size_t>(vallenMax);
  maxLineBytes_ = std::max(kFirstLineCap, keylenMax_ + vallenMax_ +
                                              static_cast<size_t>(kvsnameMax) + kLineOverheadBytes);
  return Status::ok();
}

size_t Pmi1Client::maxKeyChars() const {
  return keylenMax_ - 1 - pmi1::kChunkSuffixChars;
}

size_t Pmi1Client::maxValueBytes() const {
  return pmi1::kMaxChunks * (pmi1::chunkHexChars(vallenMax_ - 1) / 2);
}

Status Pmi1Client::checkKey(std::string_view key) const {
  bool plain = !key.empty();
  for (char c : key) plain = plain && isKeyCharacter(c);
  if (!plain) {
    return invalidArgument("PMI-1 key '" + pmi1::quoteLine(key, 80) +
                           "' must be non-empty letters, digits and _-.:/");
  }
  if (key.size() > maxKeyChars()) {
    return invalidArgument("PMI-1 key '" + pmi1::quoteLine(key, 80) + "' is " +
                           std::to_string(key.size()) + " characters; the server's keylen_max=" +
                           std::to_string(keylenMax_) + " allows " + std::to_string(maxKeyChars()));
  }
  return Status::ok();
}

Status Pmi1Client::put(std::string_view key, std::span<const uint8_t> bytes, Deadline deadline) {
  std::lock_guard<std::mutex> lock(mutex_);
  WEFT_TRY(usable("cmd=put"));
  WEFT_TRY(checkKey(key));
  std::vector<std::string> chunks;
  // Hydra keeps vallen_max - 1 characters of a value and drops the rest without a word.
  WEFT_TRY(pmi1::splitValue(key, bytes, vallenMax_ - 1, &chunks));
  for (size_t i = 0; i < chunks.size(); ++i) {
    std::string name = pmi1::chunkKey(key, i);
    pmi1::Message reply;
    WEFT_TRY(exchange(
        pmi1::formatLine("put", {{"kvsname", kvsname_}, {"key", name}, {"value", chunks[i]}}),
        "put_result", "cmd=put of key '" + name + "'", deadline, &reply));
  }
  return Status::ok();
}

Status Pmi1Client::barrier(Deadline deadline) {
  std::lock_guard<std::mutex> lock(mutex_);
  WEFT_TRY(usable("cmd=barrier_in"));
  pmi1::Message reply;
  return exchange(pmi1::formatLine("barrier_in", {}), "barrier_out", "cmd=barrier_in", deadline,
                  &reply);
}

Status Pmi1Client::get(std::string_view key, std::vector<uint8_t>* bytes, Deadline deadline) {
  std::lock_guard<std::mutex> lock(mutex_);
  WEFT_TRY(usable("cmd=get"));
  WEFT_TRY(checkKey(key));
  std::string hex;
  size_t count = 1;
  for (size_t i = 0; i < count; ++i) {
    std::string name = pmi1::chunkKey(key, i);
    std::string what = "cmd=get of key '" + name + "'";
    pmi1::Message reply;
    WEFT_TRY(exchange(pmi1::formatLine("get", {{"kvsname", kvsname_}, {"key", name}}), "get_result",
                      what, deadline, &reply));
    const std::string* value = reply.find("value");
    if (value == nullptr) return remoteError("PMI-1 " + what + ": the reply has no value=");
    if (i == 0) {
      WEFT_TRY(pmi1::parseFirstChunk(key, *value, &count, &hex));
    } else {
      hex += *value;
    }
  }
  if (!pmi1::fromHex(hex, bytes)) {
    return remoteError("PMI-1 value of key '" + std::string(key) + "' is not hex: '" +
                       pmi1::quoteLine(hex, 60) + "'");
  }
  return Status::ok();
}

Status Pmi1Client::finalize(Deadline deadline) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finalized_) return Status::ok();
  WEFT_TRY(usable("cmd=finalize"));
  pmi1::Message reply;
  Status acked =
      exchange(pmi1::formatLine("finalize", {}), "finalize_ack", "cmd=finalize", deadline, &reply);
  finalized_ = true;
  socket_.close();
  return acked;
}

bool Pmi1Client::finalized() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finalized_;
}

Status Pmi1Client::usable(const std::string& what) const {
  if (finalized_) return invalidUsage("PMI-1 " + what + ": the client is already finalized");
  if (!broken_.isOk()) {
    return Status(broken_.code(),
                  "PMI-1 " + what + ": the connection failed earlier: " + broken_.message());
  }
  return Status::ok();
}

Status Pmi1Client::exchange(const std::string& request, std::string_view expected,
                            const std::string& what, Deadline deadline, pmi1::Message* reply) {
  Status transported = sendLine(request, what, deadline);
  if (transported.isOk()) transported = readMessage(what, deadline, reply);
  if (transported.isOk() && reply->command() != expected) {
    transported = remoteError("PMI-1 " + what + ": expected " + command(expected) +
                              " from the server, got " + command(reply->command()));
  }
  if (!transported.isOk()) return broken_ = transported;
  const std::string* rc = reply->find("rc");
  if (rc != nullptr && *rc != "0") {
    const std::string* msg = reply->find("msg");
    return remoteError("PMI-1 " + what +
                       " failed: the server answered rc=" + pmi1::quoteLine(*rc, 20) +
                       (msg != nullptr ? " msg=" + pmi1::quoteLine(*msg) : std::string()));
  }
  return Status::ok();
}

Status Pmi1Client::sendLine(const std::string& line, const std::string& what, Deadline deadline) {
  // Without its newline, which quoteLine would show as '?'.
  std::string_view shown(line.data(), line.empty() ? 0 : line.size() - 1);
  WEFT_TRACE("PMI-1 > %s", pmi1::quoteLine(shown).c_str());
  return net::sendAll(socket_.fd(), line.data(), line.size(), deadline)
      .withContext("PMI-1 " + what + ": sending to the server");
}

Status Pmi1Client::readMessage(const std::string& what, Deadline deadline, pmi1::Message* message) {
  std::string line;
  WEFT_TRY(readLine(what, deadline, &line));
  Status parsed = pmi1::Message::parse(line, message);
  if (!parsed.isOk()) {
    return remoteError("PMI-1 " + what + ": garbled reply from the server (" + parsed.message() +
                       "): '" + pmi1::quoteLine(line) + "'");
  }
  return Status::ok();
}

Status Pmi1Client::readLine(const std::string& what, Deadline deadline, std::string* line) {
  while (true) {
    size_t newline = input_.find('\n');
    if (newline != std::string::npos && newline <= maxLineBytes_) {
      line->assign(input_, 0, newline);
      input_.erase(0, newline + 1);
      WEFT_TRACE("PMI-1 < %s", pmi1::quoteLine(*line).c_str());
      return Status::ok();
    }
    if (input_.size() > maxLineBytes_) {
      return remoteError("PMI-1 " + what + ": the server's reply is longer than " +
                         std::to_string(maxLineBytes_) + " bytes; refused: '" +
                         pmi1::quoteLine(input_, 60) + "'");
    }
    char buffer[kReadChunkBytes];
    ssize_t n = recv(socket_.fd(), buffer, sizeof(buffer), 0);
    if (n > 0) {
      input_.append(buffer, static_cast<size_t>(n));
      continue;
    }
    int err = n == 0 ? 0 : errno;
    if (n == 0 || err == ECONNRESET) {
      return remoteError("PMI-1 " + what + ": the server closed the connection" +
                         (input_.empty()
                              ? std::string(" before replying")
                              : " in the middle of a reply: '" + pmi1::quoteLine(input_) + "'"));
    }
    if (err == EINTR) continue;
    if (err != EAGAIN && err != EWOULDBLOCK) {
      return systemError("PMI-1 " + what + ": receiving from the server", err);
    }
    if (!net::waitFor(socket_.fd(), POLLIN, deadline)) {
      return timeoutError("PMI-1 " + what + ": no reply from the server before the deadline");
    }
  }
}

}  // namespace weft::bootstrap
