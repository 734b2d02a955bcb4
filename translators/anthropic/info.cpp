// Anthropic's model list and model object.
#include "translators/anthropic/info.hpp"

#include "translators/canonical/json.hpp"

namespace infergate::translators::anthropic {

namespace {

void write_model(json::Writer& w, const std::string& name, const std::string& created) {
    w.StartObject();
    w.Key("type");
    w.String("model");
    w.Key("id");
    w.String(name);
    w.Key("display_name");
    w.String(name);
    w.Key("created_at");
    w.String(created);
    w.EndObject();
}

}  // namespace

std::string encode_models(const canonical::ModelCatalogue& catalogue) {
    const std::string created = canonical::format_rfc3339(catalogue.started_unix_ns);
    const auto& models = catalogue.models;
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    w.Key("data");
    w.StartArray();
    for (const auto& m : models) {
        write_model(w, m.name, created);
    }
    w.EndArray();
    w.Key("has_more");
    w.Bool(false);
    w.Key("first_id");
    models.empty() ? w.Null() : w.String(models.front().name);
    w.Key("last_id");
    models.empty() ? w.Null() : w.String(models.back().name);
    w.EndObject();
    return out;
}

canonical::Result<std::string> encode_model(const canonical::ModelCatalogue& catalogue,
                                            std::string_view id) {
    if (const auto* m = catalogue.find(id)) {
        std::string out;
        json::StringOut os{&out};
        json::Writer w(os);
        write_model(w, m->name, canonical::format_rfc3339(catalogue.started_unix_ns));
        return out;
    }
    canonical::Error e;
    e.status = 404;
    e.type = "not_found_error";
    e.message = "model: " + std::string(id);
    return e;
}

}  // namespace infergate::translators::anthropic
