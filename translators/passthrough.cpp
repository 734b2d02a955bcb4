#include "translators/passthrough.hpp"

#include "translators/framing/framing.hpp"
#include "translators/openai/codec.hpp"
#include "translators/openai/passthrough.hpp"

namespace infergate::translators {

std::optional<canonical::Error> check_passthrough(const canonical::GenerationRequest& req,
                                                  const Plan& plan) {
    if (!plan.edit_body) {
        return std::nullopt;
    }
    return openai::check_upstream_settings(req, plan.flavor);
}

std::string passthrough_request(std::string& client_body, const canonical::GenerationRequest& req,
                                const Plan& plan, std::string_view upstream_model) {
    if (!plan.edit_body) {
        return std::move(client_body);
    }
    openai::RequestEdits edits;
    const bool renamed =
        openai::name_edits(plan.flavor, req.sampling.keep_stop_str.has_value(), edits);
    const bool new_model = upstream_model != req.model;
    if (!new_model && !plan.ask_usage && !plan.ask_running && !renamed) {
        return std::move(client_body);
    }
    if (new_model) {
        edits.model = upstream_model;
    }
    edits.include_usage = plan.ask_usage;
    edits.continuous_usage = plan.ask_running;
    std::string body;
    body.reserve(client_body.size() + 96);
    if (!openai::edit_request(client_body, edits, body)) {
        return std::move(client_body);  // it was decoded, so it is valid JSON: not reached
    }
    return body;
}

bool passthrough_rename(std::string_view response, std::string_view client_model,
                        std::string& out) {
    openai::ResponseEdits edits;
    edits.model = client_model;
    out.reserve(response.size() + client_model.size());
    return openai::edit_response(response, edits, out);
}

PassthroughEvents::PassthroughEvents(const Plan& plan, std::string client_model,
                                     std::string stream_id)
    : model_(std::move(client_model)),
      id_(std::move(stream_id)),
      drop_usage_(plan.ask_usage),
      strip_running_(plan.ask_running) {}

void PassthroughEvents::relay(std::string_view data, bool usage_only, std::string& out) const {
    if (usage_only && drop_usage_) {
        return;
    }
    if (framing::is_done_sentinel(data)) {
        out.append(framing::kSseDone);
        return;
    }
    const bool strip_usage = strip_running_ && !usage_only;
    const bool multi_line = data.find('\n') != std::string_view::npos;
    if (model_.empty() && id_.empty() && !strip_usage && !multi_line) {
        framing::write_sse_data(data, out);
        return;
    }
    openai::ResponseEdits e;
    e.model = model_;
    e.id = id_;
    e.strip_usage = strip_usage;
    e.one_line = true;
    e.trusted = true;  // the backend codec decoded it already
    const size_t mark = out.size();
    framing::begin_sse_data(out);
    if (openai::edit_response(data, e, out)) {
        framing::end_sse_data(out);
        return;
    }
    out.resize(mark);
    framing::write_sse_data_lines(data, out);
}

}  // namespace infergate::translators
