// Ollama's model list, running models, version and model details.
#include "translators/ollama/info.hpp"

#include "translators/canonical/json.hpp"

namespace infergate::translators::ollama {

namespace {

void write_details(json::Writer& w) {
    w.Key("details");
    w.StartObject();
    w.Key("parent_model");
    w.String("");
    w.Key("format");
    w.String("");
    w.Key("family");
    w.String("");
    w.Key("families");
    w.Null();
    w.Key("parameter_size");
    w.String("");
    w.Key("quantization_level");
    w.String("");
    w.EndObject();
}

std::string encode_list(const canonical::ModelCatalogue& catalogue, bool running) {
    const std::string modified = canonical::format_rfc3339(catalogue.started_unix_ns);
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    w.Key("models");
    w.StartArray();
    for (const auto& m : catalogue.models) {
        w.StartObject();
        w.Key("name");
        w.String(m.name);
        w.Key("model");
        w.String(m.name);
        if (running) {
            w.Key("size");
            w.Int(0);
            w.Key("digest");
            w.String("");
            write_details(w);
            w.Key("expires_at");
            w.String("0001-01-01T00:00:00Z");  // Ollama's "never" (a zero Go time)
            w.Key("size_vram");
            w.Int(0);
            if (catalogue.max_model_len) {
                w.Key("context_length");
                w.Int64(*catalogue.max_model_len);
            }
        } else {
            w.Key("modified_at");
            w.String(modified);
            w.Key("size");
            w.Int(0);
            w.Key("digest");
            w.String("");
            write_details(w);
        }
        w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    return out;
}

}  // namespace

std::string encode_tags(const canonical::ModelCatalogue& catalogue) {
    return encode_list(catalogue, false);
}

std::string encode_ps(const canonical::ModelCatalogue& catalogue) {
    return encode_list(catalogue, true);
}

std::string encode_version() {
    return "{\"version\":\"" + std::string(kApiVersion) + "\"}";
}

canonical::Result<std::string> encode_show(const canonical::ModelCatalogue& catalogue,
                                           std::string_view request_body) {
    json::Document doc;
    if (auto err = json::parse(request_body, doc)) {
        return *err;
    }
    std::string wanted;
    for (const char* key : {"model", "name"}) {  // "name" is the older spelling
        if (doc.IsObject()) {
            if (const auto* v = json::find(doc, key); v != nullptr && v->IsString()) {
                wanted = std::string(json::view(*v));
                break;
            }
        }
    }
    if (wanted.empty()) {
        return canonical::bad_request("model is required", "model");
    }
    bool known = false;
    for (const auto& m : catalogue.models) {
        known = known || m.name == wanted || m.name + ":latest" == wanted;
    }
    if (!known) {
        canonical::Error e;
        e.status = 404;
        e.type = "not_found_error";
        e.message = "model '" + wanted + "' not found";
        return e;
    }
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    w.Key("modelfile");
    w.String("");
    w.Key("parameters");
    w.String("");
    w.Key("template");
    w.String("");
    write_details(w);
    w.Key("model_info");
    w.StartObject();
    if (catalogue.max_model_len) {
        w.Key("general.context_length");
        w.Int64(*catalogue.max_model_len);
    }
    w.EndObject();
    w.Key("capabilities");
    w.StartArray();
    w.String("completion");
    w.EndArray();
    w.Key("modified_at");
    w.String(canonical::format_rfc3339(catalogue.started_unix_ns));
    w.EndObject();
    return out;
}

}  // namespace infergate::translators::ollama
