// What weft_tune's commands share: size arguments and text, and the tuner's Layout for a
// described (not running) job.
#pragma once

#include <cstddef>
#include <string>

#include "tune/cost_model.h"
#include "tune/select.h"
#include "tune/tuning_table.h"

namespace weft_tune {

using weft::AlgoId;
using weft::CollType;

// "64K" or "1.5M" (binary suffixes K, M, G); calls fail(message) on anything else.
size_t parseBytes(const char* text, void (*fail)(const char*));
// "4 KiB", "512 B".
std::string sizeText(size_t bytes);
// "allreduce" -> CollType; false when no collective has that name.
bool collFromName(const std::string& name, CollType* out);

// The Layout a communicator of this node layout would plan with, every node on its own machine
// with `cores` hardware threads (0: one per rank), or all on one machine (emulated clusters).
weft::Layout describedLayout(const weft::topo::NodeLayout& nodes, bool intraShm,
                             const weft::tune::CostParams& params, int cores, bool oneMachine);

// Reads and parses a tuning table file; errors name the file.
weft::Status readTuningTable(const std::string& path, weft::tune::TuningTable* out);

int runPredict(int argc, char** argv);
int runMeasure(int argc, char** argv);
int runExplain(int argc, char** argv);
int runFit(int argc, char** argv);

}  // namespace weft_tune
