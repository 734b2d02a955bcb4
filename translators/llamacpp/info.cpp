// llama.cpp's /props.
#include "translators/llamacpp/info.hpp"

#include "translators/canonical/json.hpp"

namespace infergate::translators::llamacpp {

std::string encode_props(const canonical::ModelCatalogue& catalogue) {
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    w.Key("default_generation_settings");
    w.StartObject();
    if (catalogue.max_model_len) {
        w.Key("n_ctx");
        w.Int64(*catalogue.max_model_len);
    }
    w.Key("params");
    w.StartObject();
    w.Key("n_predict");
    w.Int(-1);  // llama.cpp's "until the end": what a llama.cpp client gets with no budget
    w.EndObject();
    w.EndObject();
    w.Key("model_path");
    w.String(catalogue.served_model);  // the model's name: the only name the backend's API gives
    w.Key("modalities");
    w.StartObject();
    w.Key("vision");
    w.Bool(false);
    w.EndObject();
    w.Key("build_info");
    w.String("infergate-" + catalogue.version);
    w.EndObject();
    return out;
}

}  // namespace infergate::translators::llamacpp
