#include "tune/table_search.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "base/env.h"
#include "base/log.h"

namespace weft::tune {
namespace {

bool isDirectory(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

std::vector<std::string> tableFilesIn(const std::string& directory) {
  std::vector<std::string> files;
  DIR* dir = opendir(directory.c_str());
  if (dir == nullptr) return files;
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".txt") == 0) {
      files.push_back(directory + "/" + name);
    }
  }
  closedir(dir);
  std::sort(files.begin(), files.end());
  return files;
}

Status readTable(const std::string& path, TuningTable* out) {
  std::ifstream in(path);
  if (!in) return invalidUsage("cannot read tuning table " + path);
  std::stringstream text;
  text << in.rdbuf();
  return parseTuningTable(text.str(), path, out);
}

}  // namespace

std::vector<std::string> defaultTableDirectories() {
  auto xdg = env::get("XDG_CONFIG_HOME");
  auto home = env::get("HOME");
  std::vector<std::string> directories;
  if (xdg && !xdg->empty()) {
    directories.push_back(*xdg + "/weft/tuning");
  } else if (home && !home->empty()) {
    directories.push_back(*home + "/.config/weft/tuning");
  }
  directories.push_back("/etc/weft/tuning");
  return directories;
}

Status findTuningTable(const std::string& tuneFile, const std::string& fingerprint,
                       TableSearch* out) {
  *out = TableSearch{};
  const bool named = !tuneFile.empty();
  std::vector<std::string> files;
  if (named) {
    std::stringstream entries(tuneFile);
    std::string entry;
    while (std::getline(entries, entry, ':')) {
      if (entry.empty()) continue;
      if (isDirectory(entry)) {
        std::vector<std::string> inside = tableFilesIn(entry);
        files.insert(files.end(), inside.begin(), inside.end());
      } else {
        files.push_back(entry);
      }
    }
  } else {
    for (const std::string& directory : defaultTableDirectories()) {
      std::vector<std::string> inside = tableFilesIn(directory);
      files.insert(files.end(), inside.begin(), inside.end());
    }
  }
  const int ranks = fingerprintRanks(fingerprint);
  std::string others;
  for (const std::string& file : files) {
    auto table = std::make_shared<TuningTable>();
    Status read = readTable(file, table.get());
    if (!read.isOk()) {
      if (named) return read.withContext("WEFT_TUNE_FILE");
      WEFT_WARN("%s; skipped", read.message().c_str());
      continue;
    }
    if (table->layout == fingerprint) {
      out->table = std::move(table);
      return Status::ok();
    }
    if (!others.empty()) others += "; ";
    others += file + " is for '" + table->layout + "'";
    if (fingerprintRanks(table->layout) <= ranks) out->warn = true;
  }
  if (named) {
    out->refusal = "WEFT_TUNE_FILE has no table for this layout ('" + fingerprint +
                   "'): " + (others.empty() ? std::string("no table files found") : others) +
                   ". The cost model decides; measure this layout with weft_tune measure";
    if (files.empty()) out->warn = true;
  }
  return Status::ok();
}

}  // namespace weft::tune
