// The documentation of environment variables stays in step with the one table the code reads.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "base/env.h"

namespace weft {
namespace {

std::string readSourceFile(const std::string& relative) {
  std::ifstream file(std::string(WEFT_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("docs/ENVIRONMENT.md lists every variable weft reads", "[docs]") {
  std::string doc = readSourceFile("docs/ENVIRONMENT.md");
  REQUIRE_FALSE(doc.empty());
  for (const env::Variable& variable : env::table()) {
    INFO(variable.name);
    CHECK(doc.find(std::string("`") + variable.name + "`") != std::string::npos);
  }
}

TEST_CASE("the README's table lists every WEFT_ variable", "[docs]") {
  std::string readme = readSourceFile("README.md");
  REQUIRE_FALSE(readme.empty());
  for (const env::Variable& variable : env::table()) {
    std::string name = variable.name;
    if (name.rfind("WEFT_", 0) != 0) continue;
    INFO(name);
    CHECK(readme.find("`" + name + "`") != std::string::npos);
  }
}

}  // namespace weft
