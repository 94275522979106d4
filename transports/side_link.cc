#include "transports/side_link.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace weft {
namespace {

constexpr char kGoodbye = 'G';
constexpr char kNotice = 'F';  // then the culprit as an int32

}  // namespace

SideNews readSideNews(int fd) {
  SideNews news;
  char bytes[8] = {};
  ssize_t got = recv(fd, bytes, sizeof(bytes), MSG_DONTWAIT);
  if (got >= 1 && bytes[0] == kNotice) {
    int32_t named = -1;
    if (got >= 5) std::memcpy(&named, bytes + 1, sizeof(named));
    news.kind = SideNews::Kind::kFailureNotice;
    news.culprit = named;
  } else if (got >= 1 && bytes[0] == kGoodbye) {
    news.kind = SideNews::Kind::kGoodbye;
  } else if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    news.kind = SideNews::Kind::kClosed;
  }
  return news;
}

void sendGoodbye(int fd) {
  [[maybe_unused]] ssize_t ignored = send(fd, &kGoodbye, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void sendFailureNotice(int fd, int culprit) {
  char notice[5] = {kNotice};
  int32_t named = culprit;
  std::memcpy(notice + 1, &named, sizeof(named));
  [[maybe_unused]] ssize_t ignored = send(fd, notice, sizeof(notice), MSG_NOSIGNAL | MSG_DONTWAIT);
}

}  // namespace weft
