#include "bootstrap/unique_id.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "base/env.h"
#include "base/log.h"
#include "bootstrap/root_server.h"

namespace weft::bootstrap {
namespace {

constexpr char kMagic[4] = {'W', 'F', 'T', '1'};
constexpr size_t kAddressOffset = sizeof(kMagic);
constexpr size_t kSecretOffset = kAddressOffset + net::SocketAddress::kWireBytes;
static_assert(kSecretOffset + net::kSecretBytes <= WEFT_UNIQUE_ID_BYTES);

// Keeps every root server this process started alive until its round is over. Finished servers
// are reaped (their thread joined) on the next createUniqueId, and the rest are stopped at exit,
// so repeated calls do not accumulate threads or sockets.
class ServerRegistry {
 public:
  static ServerRegistry& instance() {
    static ServerRegistry registry;
    return registry;
  }
  ~ServerRegistry() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& server : servers_) server->stop();
  }

  void add(std::shared_ptr<RootServer> server) {
    std::lock_guard<std::mutex> lock(mutex_);
    reapLocked();
    servers_.push_back(std::move(server));
  }
  size_t active() {
    std::lock_guard<std::mutex> lock(mutex_);
    reapLocked();
    return servers_.size();
  }

 private:
  void reapLocked() {
    std::erase_if(servers_, [](const std::shared_ptr<RootServer>& server) {
      if (!server->done()) return false;
      server->stop();
      return true;
    });
  }

  std::mutex mutex_;
  std::vector<std::shared_ptr<RootServer>> servers_;
};

}  // namespace

void encodeUniqueId(const UniqueIdContents& contents, weftUniqueId* out) {
  auto* bytes = reinterpret_cast<uint8_t*>(out->internal);
  std::memset(bytes, 0, WEFT_UNIQUE_ID_BYTES);
  std::memcpy(bytes, kMagic, sizeof(kMagic));
  contents.root.encode(bytes + kAddressOffset);
  std::memcpy(bytes + kSecretOffset, contents.secret.data(), contents.secret.size());
}

Status decodeUniqueId(const weftUniqueId& id, UniqueIdContents* out) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(id.internal);
  if (std::memcmp(bytes, kMagic, sizeof(kMagic)) != 0) {
    return invalidArgument(
        "uniqueId was not made by weftGetUniqueId (bad magic; uninitialised or corrupted?)");
  }
  UniqueIdContents contents;
  Status address = net::SocketAddress::decode(bytes + kAddressOffset, &contents.root);
  if (!address.isOk())
    return invalidArgument("uniqueId holds a bad root address: " + address.message());
  if (contents.root.port() == 0)
    return invalidArgument("uniqueId holds a root address with port 0");
  std::memcpy(contents.secret.data(), bytes + kSecretOffset, contents.secret.size());
  *out = contents;
  return Status::ok();
}

Status createUniqueId(weftUniqueId* out) {
  if (out == nullptr) return invalidArgument("uniqueId is NULL");
  net::Interface interface;
  WEFT_TRY(net::chooseLocalInterface(&interface).withContext("weftGetUniqueId"));
  UniqueIdContents contents;
  WEFT_TRY(net::randomBytes(contents.secret.data(), contents.secret.size()));
  int64_t seconds = env::getInt("WEFT_TIMEOUT");
  Deadline deadline = seconds > 0 ? Deadline::after(seconds * 1000) : Deadline::never();
  std::shared_ptr<RootServer> server;
  WEFT_TRY(RootServer::start(interface.address, contents.secret, deadline, &server)
               .withContext("weftGetUniqueId"));
  contents.root = server->address();
  ServerRegistry::instance().add(std::move(server));
  encodeUniqueId(contents, out);
  WEFT_INFO("unique id: rendezvous root at %s (interface %s)", contents.root.toString().c_str(),
            interface.name.c_str());
  return Status::ok();
}

size_t activeRootServers() {
  return ServerRegistry::instance().active();
}

}  // namespace weft::bootstrap
