// A libFuzzer-compatible driver for builds without libFuzzer (g++, CI): replays every file of
// the corpus directories given, then runs --iterations seeded random mutations of them
// (byte flips, insertions, deletions, splices, length-field tweaks). Prints the seed; a failing
// input is written to ./crash-<iteration> before the target runs it.
//
//   farmem_fuzz_server_input [--iterations N] [--seed S] CORPUS_DIR...
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<uint8_t> mutate(std::vector<uint8_t> in, const std::vector<std::vector<uint8_t>>& all,
                            std::mt19937_64& rng) {
  const int steps = 1 + static_cast<int>(rng() % 4);
  for (int s = 0; s < steps; ++s) {
    switch (rng() % 6) {
      case 0:  // flip bits
        if (!in.empty()) in[rng() % in.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
        break;
      case 1:  // random byte
        if (!in.empty()) in[rng() % in.size()] = static_cast<uint8_t>(rng());
        break;
      case 2:  // insert bytes
        in.insert(in.begin() + static_cast<long>(in.empty() ? 0 : rng() % in.size()),
                  1 + rng() % 16, static_cast<uint8_t>(rng()));
        break;
      case 3:  // delete bytes
        if (in.size() > 1) {
          size_t at = rng() % in.size();
          size_t len = std::min<size_t>(in.size() - at, 1 + rng() % 16);
          in.erase(in.begin() + static_cast<long>(at), in.begin() + static_cast<long>(at + len));
        }
        break;
      case 4: {  // a 32-bit field to an interesting value
        static const uint32_t kValues[] = {0,       1,          7,          8,  0xFF, 0xFFFF,
                                           0x10000, 0x7FFFFFFF, 0xFFFFFFFF, 32, 4096, 65536};
        if (in.size() >= 5) {
          size_t at = 1 + rng() % (in.size() - 4);
          uint32_t v = kValues[rng() % (sizeof(kValues) / sizeof(kValues[0]))];
          std::memcpy(&in[at], &v, 4);
        }
        break;
      }
      default: {  // splice with another input
        const auto& o = all[rng() % all.size()];
        if (!o.empty() && !in.empty()) {
          size_t cut = rng() % in.size();
          in.resize(cut);
          in.insert(in.end(), o.begin() + static_cast<long>(rng() % o.size()), o.end());
        }
        break;
      }
    }
  }
  return in;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t iterations = 100000, seed = 1;
  std::vector<std::vector<uint8_t>> corpus;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--iterations" && i + 1 < argc) {
      iterations = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      for (const auto& e : std::filesystem::directory_iterator(a)) {
        std::ifstream f(e.path(), std::ios::binary);
        corpus.emplace_back(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
      }
    }
  }
  if (corpus.empty()) corpus.push_back({0});
  std::printf("fuzz: %zu corpus inputs, %llu mutations, seed=%llu\n", corpus.size(),
              static_cast<unsigned long long>(iterations), static_cast<unsigned long long>(seed));
  for (const auto& in : corpus) LLVMFuzzerTestOneInput(in.data(), in.size());
  std::mt19937_64 rng(seed);
  for (uint64_t it = 0; it < iterations; ++it) {
    std::vector<uint8_t> in = mutate(corpus[rng() % corpus.size()], corpus, rng);
    if (std::getenv("FARMEM_FUZZ_KEEP")) {
      std::ofstream f("crash-" + std::to_string(it), std::ios::binary);
      f.write(reinterpret_cast<const char*>(in.data()), static_cast<long>(in.size()));
    }
    LLVMFuzzerTestOneInput(in.data(), in.size());
  }
  std::printf("fuzz: done, no failure\n");
  return 0;
}
