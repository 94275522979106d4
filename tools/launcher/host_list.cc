#include "launcher/host_list.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "launcher/launch_options.h"

namespace weftrun {
namespace {

bool ParseSlots(std::string_view text, int* slots) {
  std::string digits(text);
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(digits.c_str(), &end, 10);
  if (digits.empty() || *end != '\0' || errno != 0 || value < 1 || value > kMaxRanks) return false;
  *slots = static_cast<int>(value);
  return true;
}

bool IsValidHostName(std::string_view name) {
  if (name.empty()) return false;
  // Host names and addresses only: anything a shell or the launch agent could take for syntax
  // (spaces, quotes, "-" in front, which ssh would read as an option) is refused.
  if (name[0] == '-') return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_' || c == ':' || c == '@' || c == '[' || c == ']';
    if (!ok) return false;
  }
  return true;
}

void AddHost(std::vector<HostSlots>* hosts, std::string_view name, int slots) {
  for (HostSlots& host : *hosts) {
    if (host.name == name) {
      host.slots += slots;
      return;
    }
  }
  hosts->push_back(HostSlots{std::string(name), slots});
}

bool CheckTotal(const std::vector<HostSlots>& hosts, const std::string& where, std::string* error) {
  long total = 0;
  for (const HostSlots& host : hosts) total += host.slots;
  if (total > kMaxRanks) {
    *error = where + ": " + std::to_string(total) + " slots in all, more than the " +
             std::to_string(kMaxRanks) + " ranks weftrun supports";
    return false;
  }
  if (hosts.empty()) {
    *error = where + ": no hosts";
    return false;
  }
  return true;
}

}  // namespace

bool ParseHostList(std::string_view text, std::vector<HostSlots>* hosts, std::string* error) {
  hosts->clear();
  std::string where = "-H " + std::string(text);
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view entry = text.substr(start, comma - start);
    start = comma + 1;
    // "host:N"; a name with several colons is an IPv6 address unless written "[addr]:N".
    std::string_view name = entry;
    int slots = 1;
    size_t colon = entry.rfind(':');
    bool bracketed = !entry.empty() && entry[0] == '[';
    if (colon != std::string_view::npos &&
        (entry.find(':') == colon || (bracketed && colon > 0 && entry[colon - 1] == ']'))) {
      name = entry.substr(0, colon);
      if (!ParseSlots(entry.substr(colon + 1), &slots)) {
        *error = where + ": invalid slot count in '" + std::string(entry) + "' (1.." +
                 std::to_string(kMaxRanks) + ")";
        return false;
      }
    }
    if (bracketed && name.size() > 2 && name.back() == ']') name = name.substr(1, name.size() - 2);
    if (!IsValidHostName(name)) {
      *error = where + ": invalid host name in '" + std::string(entry) + "'";
      return false;
    }
    AddHost(hosts, name, slots);
  }
  return CheckTotal(*hosts, where, error);
}

bool ReadHostfile(const std::string& path, std::vector<HostSlots>* hosts, std::string* error) {
  hosts->clear();
  std::ifstream file(path);
  if (!file) {
    *error = "--hostfile " + path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    std::string where = "--hostfile " + path + ":" + std::to_string(number);
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string name;
    if (!(words >> name)) continue;  // blank or comment
    if (!IsValidHostName(name)) {
      *error = where + ": invalid host name '" + name + "'";
      return false;
    }
    int slots = 1;
    for (std::string word; words >> word;) {
      size_t equals = word.find('=');
      std::string key = word.substr(0, equals);
      std::string value = equals == std::string::npos ? "" : word.substr(equals + 1);
      if (key == "slots") {
        if (!ParseSlots(value, &slots)) {
          *error = where + ": invalid '" + word + "' (1.." + std::to_string(kMaxRanks) + ")";
          return false;
        }
      } else if (key != "max_slots") {
        *error = where + ": unknown '" + word + "' (expected slots=N)";
        return false;
      }
    }
    AddHost(hosts, name, slots);
  }
  return CheckTotal(*hosts, "--hostfile " + path, error);
}

bool IsThisHost(std::string_view name) {
  if (name == "localhost" || name == "127.0.0.1" || name == "::1") return true;
  char own[HOST_NAME_MAX + 1] = {};
  if (gethostname(own, sizeof own - 1) != 0) return false;
  std::string_view self = own;
  if (name == self) return true;
  // "node0" names "node0.cluster.example" and the other way round.
  auto short_name = [](std::string_view full) { return full.substr(0, full.find('.')); };
  return short_name(name) == short_name(self) &&
         (name.find('.') == std::string_view::npos || self.find('.') == std::string_view::npos);
}

}  // namespace weftrun
