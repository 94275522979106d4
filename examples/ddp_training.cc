// Data-parallel training with weft, the way DDP does it: every rank holds the same model and a
// different shard of the data; after each backward pass the gradients are averaged across ranks
// with all-reduce, so the models stay identical. The gradients are all-reduced in buckets (one
// per layer) as soon as backpropagation produces them, with non-blocking calls, so the
// communication of one bucket overlaps the computation of the next.
//
//   weftrun -n 4 ./ddp_training [epochs]
//
// The model is a small MLP (16 -> 64 -> 64 -> 1, tanh) fitted by SGD to a synthetic regression
// target. Every rank prints the same loss per epoch: that is the check that gradients were
// averaged correctly.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "weft/weft.h"

namespace {

constexpr int kInputs = 16;
constexpr int kHidden = 64;
constexpr int kSamples = 8192;  // over all ranks
constexpr int kBatch = 32;      // per rank and step
constexpr float kLearningRate = 0.05f;

void check(weftResult_t result, const char* what) {
  if (result == weftSuccess) return;
  std::fprintf(stderr, "%s failed: %s (%s)\n", what, weftGetErrorString(result),
               weftGetLastError(nullptr));
  std::exit(1);
}

// One fully connected layer, y = W x + b, with its gradient buffers (one all-reduce bucket).
struct Layer {
  int in, out;
  std::vector<float> weights, bias, gradWeights, gradBias;
  std::vector<float> params;  // gradients packed contiguously for the all-reduce

  Layer(int inputs, int outputs, std::mt19937& rng) : in(inputs), out(outputs) {
    std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(static_cast<float>(inputs)));
    weights.resize(in * out);
    for (float& w : weights) w = normal(rng);
    bias.assign(out, 0.0f);
    params.resize(in * out + out);
  }
  void forward(const float* x, float* y) const {
    for (int o = 0; o < out; ++o) {
      float sum = bias[o];
      for (int i = 0; i < in; ++i) sum += weights[o * in + i] * x[i];
      y[o] = sum;
    }
  }
};

struct Dataset {
  std::vector<float> x, y;
};

Dataset makeShard(int rank, int nranks) {
  std::mt19937 rng(1234);  // the same full dataset on every rank; each keeps its shard
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> direction(kInputs);
  for (float& d : direction) d = uniform(rng);
  Dataset all;
  for (int s = 0; s < kSamples; ++s) {
    float dot = 0;
    for (int i = 0; i < kInputs; ++i) {
      float v = uniform(rng);
      all.x.push_back(v);
      dot += v * direction[i];
    }
    all.y.push_back(std::sin(2.0f * dot));
  }
  int per = kSamples / nranks;
  Dataset shard;
  shard.x.assign(all.x.begin() + rank * per * kInputs, all.x.begin() + (rank + 1) * per * kInputs);
  shard.y.assign(all.y.begin() + rank * per, all.y.begin() + (rank + 1) * per);
  return shard;
}

class Model {
 public:
  explicit Model(std::mt19937& rng)
      : layers_{Layer(kInputs, kHidden, rng), Layer(kHidden, kHidden, rng),
                Layer(kHidden, 1, rng)} {}

  // One SGD step on a batch; gradients are all-reduced bucket by bucket as they appear.
  float step(const float* x, const float* y, int batch, weftComm_t comm, double* commWaitMs) {
    for (Layer& layer : layers_) {
      layer.gradWeights.assign(layer.weights.size(), 0.0f);
      layer.gradBias.assign(layer.bias.size(), 0.0f);
    }
    std::vector<float> a0(kInputs), z1(kHidden), a1(kHidden), z2(kHidden), a2(kHidden), out(1);
    float loss = 0;
    // Backpropagation runs the layers in reverse; each layer's bucket is complete once every
    // sample has passed through it, so the per-sample work is arranged layer by layer.
    std::vector<float> cache1(batch * kHidden), cache2(batch * kHidden), delta3(batch);
    for (int s = 0; s < batch; ++s) {
      const float* xs = x + s * kInputs;
      layers_[0].forward(xs, z1.data());
      for (int h = 0; h < kHidden; ++h) a1[h] = std::tanh(z1[h]);
      layers_[1].forward(a1.data(), z2.data());
      for (int h = 0; h < kHidden; ++h) a2[h] = std::tanh(z2[h]);
      layers_[2].forward(a2.data(), out.data());
      float error = out[0] - y[s];
      loss += 0.5f * error * error;
      delta3[s] = error / batch;
      std::copy(a1.begin(), a1.end(), cache1.begin() + s * kHidden);
      std::copy(a2.begin(), a2.end(), cache2.begin() + s * kHidden);
    }
    std::vector<weftRequest_t> pending;
    // Layer 3 gradients, then hand them to weft while layer 2 is computed.
    std::vector<float> delta2(batch * kHidden);
    for (int s = 0; s < batch; ++s) {
      for (int h = 0; h < kHidden; ++h) {
        layers_[2].gradWeights[h] += delta3[s] * cache2[s * kHidden + h];
        delta2[s * kHidden + h] = delta3[s] * layers_[2].weights[h] *
                                  (1 - cache2[s * kHidden + h] * cache2[s * kHidden + h]);
      }
      layers_[2].gradBias[0] += delta3[s];
    }
    pending.push_back(startAllReduce(layers_[2], comm));
    std::vector<float> delta1(batch * kHidden, 0.0f);
    for (int s = 0; s < batch; ++s) {
      for (int o = 0; o < kHidden; ++o) {
        float d = delta2[s * kHidden + o];
        for (int i = 0; i < kHidden; ++i) {
          layers_[1].gradWeights[o * kHidden + i] += d * cache1[s * kHidden + i];
          delta1[s * kHidden + i] += d * layers_[1].weights[o * kHidden + i];
        }
        layers_[1].gradBias[o] += d;
      }
      for (int i = 0; i < kHidden; ++i) {
        float a = cache1[s * kHidden + i];
        delta1[s * kHidden + i] *= 1 - a * a;
      }
    }
    pending.push_back(startAllReduce(layers_[1], comm));
    for (int s = 0; s < batch; ++s) {
      const float* xs = x + s * kInputs;
      for (int o = 0; o < kHidden; ++o) {
        float d = delta1[s * kHidden + o];
        for (int i = 0; i < kInputs; ++i) layers_[0].gradWeights[o * kInputs + i] += d * xs[i];
        layers_[0].gradBias[o] += d;
      }
    }
    pending.push_back(startAllReduce(layers_[0], comm));

    auto waitStart = std::chrono::steady_clock::now();
    for (weftRequest_t& request : pending) check(weftWait(&request, -1), "weftWait");
    *commWaitMs += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                             waitStart)
                       .count();
    for (Layer& layer : layers_) {
      const float* averaged = layer.params.data();
      for (size_t i = 0; i < layer.weights.size(); ++i) {
        layer.weights[i] -= kLearningRate * averaged[i];
      }
      for (size_t i = 0; i < layer.bias.size(); ++i) {
        layer.bias[i] -= kLearningRate * averaged[layer.weights.size() + i];
      }
    }
    return loss;
  }

 private:
  static weftRequest_t startAllReduce(Layer& layer, weftComm_t comm) {
    std::copy(layer.gradWeights.begin(), layer.gradWeights.end(), layer.params.begin());
    std::copy(layer.gradBias.begin(), layer.gradBias.end(),
              layer.params.begin() + layer.gradWeights.size());
    weftRequest_t request = nullptr;
    check(weftAllReduce(layer.params.data(), layer.params.data(), layer.params.size(),
                        weftFloat32, weftAvg, comm, &request),
          "weftAllReduce");
    return request;
  }

  std::vector<Layer> layers_;
};

}  // namespace

int main(int argc, char** argv) {
  int epochs = argc > 1 ? std::atoi(argv[1]) : 5;
  weftComm_t comm = nullptr;
  check(weftCommInitFromEnv(&comm, nullptr), "weftCommInitFromEnv");
  int rank = 0, nranks = 1;
  weftCommUserRank(comm, &rank);
  weftCommCount(comm, &nranks);
  if (kSamples % (nranks * kBatch) != 0) {
    std::fprintf(stderr, "use a rank count that divides %d\n", kSamples / kBatch);
    return 1;
  }

  std::mt19937 rng(42);  // the same initial weights on every rank
  Model model(rng);
  Dataset shard = makeShard(rank, nranks);
  const int steps = static_cast<int>(shard.y.size()) / kBatch;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    double commWaitMs = 0;
    auto start = std::chrono::steady_clock::now();
    double localLoss = 0;
    for (int s = 0; s < steps; ++s) {
      localLoss += model.step(shard.x.data() + s * kBatch * kInputs, shard.y.data() + s * kBatch,
                              kBatch, comm, &commWaitMs);
    }
    double totalLoss = 0;
    check(weftAllReduce(&localLoss, &totalLoss, 1, weftFloat64, weftSum, comm, nullptr),
          "weftAllReduce(loss)");
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count();
    std::printf("rank %d epoch %d loss %.6f (%.1f ms, %.1f ms waiting for all-reduce)\n", rank,
                epoch, totalLoss / kSamples, ms, commWaitMs);
  }
  check(weftCommDestroy(comm), "weftCommDestroy");
  return 0;
}
