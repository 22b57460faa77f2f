#include "farmem/bench/workload/scrambled_zipfian_chooser.h"

#include <xxhash.h>

namespace farmem::bench::workload {

uint64_t ScrambledZipfianChooser::item_of_rank(uint64_t rank) const {
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(rank >> (8 * i));
  return XXH3_64bits(bytes, sizeof(bytes)) % zipf_.item_count();
}

}  // namespace farmem::bench::workload
