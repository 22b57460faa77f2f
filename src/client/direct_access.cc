#include "direct_access.h"

#include <fmt/format.h>

namespace farmem::client::direct {

Status lost_mapping(const fabric::Endpoint& ep) {
  return ep.failure().ok() ? PeerFailed(fmt::format("connection to {} is closed", ep.peer()))
                           : ep.failure();
}

}  // namespace farmem::client::direct
