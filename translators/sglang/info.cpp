// SGLang's /get_model_info and /get_server_info.
#include "translators/sglang/info.hpp"

#include "translators/canonical/json.hpp"

namespace infergate::translators::sglang {

namespace {

std::string encode(const canonical::ModelCatalogue& catalogue, bool server_info) {
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    w.Key("model_path");
    w.String(catalogue.served_model);
    w.Key("tokenizer_path");
    w.String(catalogue.served_model);
    w.Key("is_generation");
    w.Bool(true);
    if (server_info) {
        w.Key("served_model_name");
        w.String(catalogue.served_model);
        w.Key("version");
        w.String("infergate-" + catalogue.version);
        w.Key("backend");
        w.StartObject();
        w.Key("url");
        w.String(catalogue.backend_url);
        w.Key("ready");
        w.Bool(catalogue.backend_ready);
        w.Key("dialect");
        w.String(catalogue.backend_ready ? catalogue.backend_dialect : "unknown");
        w.Key("detected");
        w.String(catalogue.backend_detail);
        w.EndObject();
    } else {
        w.Key("preferred_sampling_params");
        w.Null();
        w.Key("weight_version");
        w.String("default");
    }
    w.EndObject();
    return out;
}

}  // namespace

std::string encode_model_info(const canonical::ModelCatalogue& catalogue) {
    return encode(catalogue, false);
}

std::string encode_server_info(const canonical::ModelCatalogue& catalogue) {
    return encode(catalogue, true);
}

}  // namespace infergate::translators::sglang
