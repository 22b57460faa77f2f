// Dropping the kernel's page cache before a measurement of the mmap baseline, so that the file's
// pages start cold (sync, then "1" into /proc/sys/vm/drop_caches; needs root).
// Thread safety: any thread; it affects the whole machine.
#pragma once

#include "farmem/common/status.h"

namespace farmem::bench {

// kPermissionDenied when /proc/sys/vm/drop_caches cannot be written.
Status drop_page_cache();

}  // namespace farmem::bench
