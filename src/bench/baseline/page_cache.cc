#include "farmem/bench/baseline/page_cache.h"

#include <unistd.h>

#include <fstream>

namespace farmem::bench {

Status drop_page_cache() {
  ::sync();
  std::ofstream f("/proc/sys/vm/drop_caches");
  f << "1\n";
  f.flush();
  if (!f) return PermissionDenied("cannot write /proc/sys/vm/drop_caches (needs root)");
  return OkStatus();
}

}  // namespace farmem::bench
