// OpenAI's model list and model object.
#include "translators/openai/info.hpp"

#include "translators/canonical/json.hpp"

namespace infergate::translators::openai {

namespace {

void write_model(json::Writer& w, const canonical::CatalogueModel& m,
                 const canonical::ModelCatalogue& catalogue) {
    w.StartObject();
    w.Key("id");
    w.String(m.name);
    w.Key("object");
    w.String("model");
    w.Key("created");
    w.Int64(catalogue.started_unix_s());
    w.Key("owned_by");
    w.String("infergate");
    w.Key("root");
    w.String(m.target);
    if (catalogue.max_model_len) {
        w.Key("max_model_len");
        w.Int64(*catalogue.max_model_len);
    }
    w.EndObject();
}

}  // namespace

std::string encode_models(const canonical::ModelCatalogue& catalogue) {
    std::string out;
    json::StringOut os{&out};
    json::Writer w(os);
    w.StartObject();
    w.Key("object");
    w.String("list");
    w.Key("data");
    w.StartArray();
    for (const auto& m : catalogue.models) {
        write_model(w, m, catalogue);
    }
    w.EndArray();
    w.EndObject();
    return out;
}

canonical::Result<std::string> encode_model(const canonical::ModelCatalogue& catalogue,
                                            std::string_view id) {
    if (const auto* m = catalogue.find(id)) {
        std::string out;
        json::StringOut os{&out};
        json::Writer w(os);
        write_model(w, *m, catalogue);
        return out;
    }
    canonical::Error e;
    e.status = 404;
    e.type = "not_found_error";
    e.param = "model";
    std::string known;
    for (const auto& m : catalogue.models) {
        known += (known.empty() ? "" : ", ") + m.name;
    }
    e.message = "The model `" + std::string(id) + "` does not exist. Models served here: " +
                (known.empty() ? "(none discovered yet)" : known);
    return e;
}

}  // namespace infergate::translators::openai
