// weft_tune: the tuner's tools.
//
//   weft_tune [predict] ...   the model's decision table for a described layout (predict.cc)
//   weft_tune measure ...     inside a job: times every candidate and writes a tuning table
//   weft_tune explain ...     for a collective and size: the candidates, predicted and measured
//                             times, and why the winner won
//   weft_tune fit TABLE...    fits the model's links to measured tables; its error and picks
#include <cstring>

#include "weft_tune_cmds/tune_tool.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "measure") == 0) {
    return weft_tune::runMeasure(argc - 1, argv + 1);
  }
  if (argc > 1 && std::strcmp(argv[1], "explain") == 0) {
    return weft_tune::runExplain(argc - 1, argv + 1);
  }
  if (argc > 1 && std::strcmp(argv[1], "fit") == 0) {
    return weft_tune::runFit(argc - 1, argv + 1);
  }
  if (argc > 1 && std::strcmp(argv[1], "predict") == 0) {
    return weft_tune::runPredict(argc - 1, argv + 1);
  }
  return weft_tune::runPredict(argc, argv);
}
