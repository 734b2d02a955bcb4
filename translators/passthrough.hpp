#pragma once
// The fast path (Plan::fast_path: OpenAI and SGLang in front of themselves): the client's bytes
// go upstream and the backend's come back, with only what the plan says edited in place
// (translators/openai/passthrough.hpp does the byte edits; right for any valid JSON, fuzzed
// against parse-edit-serialize). What the proxy calls, whatever the pair.

#include <optional>
#include <string>
#include <string_view>

#include "translators/canonical/types.hpp"
#include "translators/pairing.hpp"

namespace infergate::translators {

// A setting the backend's OpenAI layer would silently ignore (llama.cpp has no min_tokens, ...)
// is refused, as the encoder of a translated pair would refuse it. Only where the body is edited.
std::optional<canonical::Error> check_passthrough(const canonical::GenerationRequest& req,
                                                  const Plan& plan);

// The body to send upstream: the client's own (moved from `client_body`), with the model name
// the backend serves, the names its layer reads (openai::name_edits) and the usage asked for on
// the client's behalf (Plan::ask_usage, Plan::ask_running).
std::string passthrough_request(std::string& client_body, const canonical::GenerationRequest& req,
                                const Plan& plan, std::string_view upstream_model);

// A whole answer with the model name the client used (`client_model`) in place of the backend's
// (an alias, or a dated version of the model it was sent). False: left as it is.
bool passthrough_rename(std::string_view response, std::string_view client_model, std::string& out);

// The events of one passed-through stream.
class PassthroughEvents {
public:
    // `client_model`: empty when the backend's name is the client's; `stream_id`: the id every
    // chunk gets (Plan::rewrite_ids), empty to keep the backend's.
    PassthroughEvents(const Plan& plan, std::string client_model, std::string stream_id);
    // Appends one backend event (`data`, decoded already, so known to be valid) as the client
    // gets it: the terminator as the dialect writes it; JSON with the edits made, on one line (a
    // payload that came over several `data:` lines goes out on one, which naive line-based
    // clients need); anything else as it came. `usage_only`: the event carried only usage, which
    // is dropped when it was asked for on the client's behalf.
    void relay(std::string_view data, bool usage_only, std::string& out) const;

private:
    std::string model_;
    std::string id_;
    bool drop_usage_;
    bool strip_running_;
};

}  // namespace infergate::translators
