// The agent page source: a paged region (paged/manager.h) whose pages come from, and go back
// through, farmem-agent (RegionOptions::source = make_agent_source(agent_cluster)).
//
// fetch() sends one read per page (pieces of at most wire::kMaxReadBytes for larger pages), all
// of a call concurrently, so the agent can aggregate them with other hosts' requests; the
// reply's data lands in the pager's staging buffer. write_back() sends the pages' data and
// returns once the agent holds it (asynchronous write-back): any process reading through the
// same agent sees it at once; processes reading the memory node directly see it after the
// agent flushes (flush_agent(), or the agent's own background write, within a round).
// advise(kStatic) pins the advised pages in the agent's static cache. Opening and closing a
// private region invalidates the agent's copies of its memory; a shared file-preloaded copy
// keeps them, so processes reading the same file share the agent's entries.
// Deadlines: each request is bounded by the agent cluster's op_timeout_ms (give it the
// Manager's). A dead agent fails the call (kPeerFailed / kTimedOut): a page fault then ends
// the process with paged::kFaultExitStatus and one clear line (no fallback to direct).
// Traffic: path "host->agent" (payload bytes both ways, messages).
// Thread safety: PageSource's contract (pager thread); traffic() from any thread.
#pragma once

#include <memory>

#include "farmem/client/cluster.h"
#include "farmem/paged/page_source.h"

namespace farmem::agent {

// `agent`: a cluster whose only node is the agent; it must outlive the source.
std::shared_ptr<paged::PageSource> make_agent_source(client::Cluster& agent);

}  // namespace farmem::agent
