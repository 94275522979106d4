// Catch2's main, for standalone builds of this directory; the project build uses
// weft_catch_main instead.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
