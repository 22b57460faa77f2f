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
// PageManager's). A dead agent fails the call (kPeerFailed / kTimedOut): a page fault then ends
// the process with paged::kFaultExitStatus and one clear line (no fallback to direct).
// Traffic: path "host->agent" (payload bytes both ways, messages).
// Options (per source, so one process can give its regions different treatment through one
// agent): dynamic_cache false sets wire::kReadNoDynamic on every read (the agent's dynamic cache
// is neither used nor filled for them); pin_static holds each private region of the source whole
// in the agent's static cache from its creation (pinned in region_opened, after the
// invalidation, and dropped by region_closed's), without pinning any page locally. The pin is
// best effort: when the agent refuses it (static budget full, static caching off) the region is
// served uncached, one warning is printed and pin_refusals() counts it; a dead agent still fails.
// Thread safety: PageSource's contract (pager thread); traffic() from any thread.
#pragma once

#include <memory>

#include "farmem/client/cluster.h"
#include "farmem/paged/page_source.h"

namespace farmem::agent {

struct AgentSourceOptions {
  bool dynamic_cache = true;  // reads may use and fill the agent's dynamic cache
  bool pin_static = false;    // private regions held whole in the agent's static cache
  // advise(kStatic) also pins the advised pages in the agent's static cache (false: the advice
  // stays local to the paged layer, e.g. its own pinning of vertex arrays).
  bool pin_advised = true;
};

// `agent`: a cluster whose only node is the agent; it must outlive the source.
std::shared_ptr<paged::PageSource> make_agent_source(client::Cluster& agent,
                                                     const AgentSourceOptions& options = {});

// Regions of an agent source whose static pin the agent refused (0 for other sources).
uint64_t pin_refusals(const paged::PageSource& source);

}  // namespace farmem::agent
