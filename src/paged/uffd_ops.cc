// Page operations through the userfaultfd: wake faulting threads, write-protect or unprotect a
// page, install a page (UFFDIO_COPY) here or on an installer thread.
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>

#include "farmem/common/check.h"
#include "pager.h"

namespace farmem::paged {

uint8_t* PageManager::Impl::page_addr(const RegionState* r, uint64_t page) const {
  return static_cast<uint8_t*>(r->region->data()) + page * r->region->page_bytes();
}

void PageManager::Impl::wake(RegionState* r, uint64_t page) {
  uffdio_range range{reinterpret_cast<uint64_t>(page_addr(r, page)), r->region->page_bytes()};
  if (ioctl(uffd, UFFDIO_WAKE, &range) != 0) {
    fatal(r, page, "UFFDIO_WAKE failed", Internal(std::strerror(errno)));
  }
}

void PageManager::Impl::protect(RegionState* r, uint64_t page, bool on) {
  const PageMeta& meta = r->pages[page];
  // A mapped page is writable exactly when it is dirty: only a dirty page being written back is
  // protected again, and a page is made writable only once it is dirty.
  FARMEM_ASSERT(meta.dirty, "paged: write protection changed on a clean page");
  FARMEM_ASSERT(!on || meta.state == PageState::kCleaning || meta.state == PageState::kEvicting,
                "paged: a page write-protected that is not being written back");
  uffdio_writeprotect wp{};
  wp.range.start = reinterpret_cast<uint64_t>(page_addr(r, page));
  wp.range.len = r->region->page_bytes();
  wp.mode = on ? UFFDIO_WRITEPROTECT_MODE_WP : 0;
  if (ioctl(uffd, UFFDIO_WRITEPROTECT, &wp) != 0) {
    fatal(r, page, "UFFDIO_WRITEPROTECT failed", Internal(std::strerror(errno)));
  }
}

Installer::Await PageManager::Impl::install_all(RegionState* r, const std::vector<InstallIo>& pages,
                                                bool awaited) {
  if (installer != nullptr && !awaited) {
    offloaded_installs.fetch_add(pages.size(), std::memory_order_relaxed);
    return installer->install(r, pages);  // the job's own copy
  }
  for (const InstallIo& io : pages) install(r, io.page, io.src, io.writable);
  return Installer::Await{nullptr, {}};  // ready: nothing left to install
}

// UFFDIO_COPY, resumed after a partial copy while the address space was changing (EAGAIN).
void PageManager::Impl::install(RegionState* r, uint64_t page, const void* src, bool writable) {
  const uint64_t pb = r->region->page_bytes();
  uint64_t done = 0;
  for (int attempt = 0; done < pb; ++attempt) {
    uffdio_copy copy{};
    copy.dst = reinterpret_cast<uint64_t>(page_addr(r, page)) + done;
    copy.src = reinterpret_cast<uint64_t>(src) + done;
    copy.len = pb - done;
    copy.mode = writable ? 0 : UFFDIO_COPY_MODE_WP;
    if (ioctl(uffd, UFFDIO_COPY, &copy) == 0) return;
    if (errno != EAGAIN || attempt == 1000) {
      fatal(r, page,
            r->huge && errno == ENOMEM ? "UFFDIO_COPY failed: no free huge page (vm.nr_hugepages)"
                                       : "UFFDIO_COPY failed",
            Internal(std::strerror(errno)));
    }
    if (copy.copy > 0) done += static_cast<uint64_t>(copy.copy);
  }
}

}  // namespace farmem::paged
