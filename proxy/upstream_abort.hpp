#pragma once
// SGLang's POST /abort_request (docs/routing.md, "Cancellation"): when a client goes away, the
// exchange closes its upstream connection at once, which every engine notices; an SGLang backend
// is also told by rid, on a connection of its own, so that the generation stops even where the
// close does not reach the engine (a load balancer between infergate and SGLang keeps its own
// connection open).

#include <memory>
#include <string>
#include <vector>

namespace infergate {

class UpstreamPool;
class Worker;

// Sends one POST /abort_request {"rid": ...} per rid, detached on the worker's thread; the
// answer is read and dropped (2 s at most).
void abort_sglang_requests(Worker& worker, std::shared_ptr<UpstreamPool> pool,
                           std::vector<std::string> rids);

}  // namespace infergate
