// TGI's /info.
#include "translators/tgi/info.hpp"

#include <algorithm>

#include "translators/canonical/json.hpp"

namespace infergate::translators::tgi {

std::string encode_info(const canonical::ModelCatalogue& catalogue) {
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    w.Key("model_id");
    w.String(catalogue.served_model);
    w.Key("model_sha");
    w.Null();
    w.Key("model_pipeline_tag");
    w.String("text-generation");
    // TGI's own defaults for the limits infergate does not enforce itself.
    w.Key("max_concurrent_requests");
    w.Int(128);
    w.Key("max_best_of");
    w.Int(1);
    w.Key("max_stop_sequences");
    w.Int(4);
    if (catalogue.max_model_len) {
        w.Key("max_input_tokens");
        w.Int64(std::max<int64_t>(1, *catalogue.max_model_len - 1));
        w.Key("max_total_tokens");
        w.Int64(*catalogue.max_model_len);
    } else {
        w.Key("max_input_tokens");
        w.Null();
        w.Key("max_total_tokens");
        w.Null();
    }
    w.Key("validation_workers");
    w.Int(catalogue.threads);
    w.Key("max_client_batch_size");
    w.Int(1);
    w.Key("router");
    w.String("text-generation-router");
    w.Key("version");
    w.String(catalogue.version);
    w.Key("sha");
    w.Null();
    w.Key("docker_label");
    w.Null();
    w.EndObject();
    return out;
}

}  // namespace infergate::translators::tgi
