#include "emulator/tgi_request.hpp"

#include <algorithm>

#include "emulator/format.hpp"
#include "emulator/json_util.hpp"
#include "emulator/stream.hpp"

namespace infergate::emulator {
namespace {

using rapidjson::Value;

constexpr int kMaxStopSequences = 4;  // TGI's --max-stop-sequences default

}  // namespace

// serde_json reports where it gave up; for a complete document that is its last byte.
std::string serde_position(std::string_view body) {
    std::size_t end = body.size();
    while (end > 0 && (body[end - 1] == ' ' || body[end - 1] == '\n' || body[end - 1] == '\r' ||
                       body[end - 1] == '\t')) {
        --end;
    }
    std::size_t line = 1;
    std::size_t column = 0;
    for (std::size_t i = 0; i < end; ++i) {
        if (body[i] == '\n') {
            ++line;
            column = 0;
        } else {
            ++column;
        }
    }
    return " at line " + std::to_string(line) + " column " + std::to_string(column);
}

std::string serde_type(const Value& v) {
    if (v.IsBool()) {
        return std::string("boolean `") + (v.GetBool() ? "true" : "false") + "`";
    }
    if (v.IsInt64()) {
        return (v.GetInt64() < 0 ? "integer `" : "integer `") + std::to_string(v.GetInt64()) + "`";
    }
    if (v.IsNumber()) {
        return "floating point `" + py_float(v.GetDouble()) + "`";
    }
    if (v.IsString()) {
        return "string \"" + std::string(v.GetString(), v.GetStringLength()) + "\"";
    }
    return v.IsArray() ? "sequence" : "map";
}

namespace {

class Parser {
public:
    Parser(std::string_view body, const Options& options, TgiRequest& out)
        : body_(body), options_(options), out_(out) {}

    TgiError shape(std::string_view path, const Value& v, std::string_view expected) const {
        return {TgiError::kShape,
                "Failed to deserialize the JSON body into the target type: " + std::string(path) +
                    ": invalid type: " + serde_type(v) + ", expected " + std::string(expected) +
                    serde_position(body_)};
    }

    TgiError run(const Value& doc, bool compat);

private:
    TgiError parameters(const Value& p);

    std::string_view body_;
    const Options& options_;
    TgiRequest& out_;
    std::optional<double> temperature_, top_p_, typical_p_, repetition_penalty_, frequency_;
    std::optional<std::int64_t> top_k_, max_new_tokens_, top_n_tokens_;
    bool do_sample_ = false;
    std::optional<std::string> grammar_invalid_;  // validation.rs checks the grammar last
};

TgiError Parser::run(const Value& doc, bool compat) {
    if (!doc.IsObject()) {
        return shape("", doc, compat ? "struct CompatGenerateRequest" : "struct GenerateRequest");
    }
    const Value* inputs = member(doc, "inputs");
    if (inputs == nullptr) {
        return {TgiError::kShape,
                "Failed to deserialize the JSON body into the target type: missing field "
                "`inputs`" +
                    serde_position(body_)};
    }
    if (!inputs->IsString()) {
        return shape("inputs", *inputs, "a string");
    }
    out_.inputs = {inputs->GetString(), inputs->GetStringLength()};
    out_.return_full_text = compat;  // the model's pipeline tag is text-generation
    if (compat) {
        if (const Value* stream = member(doc, "stream")) {
            if (!stream->IsBool()) {
                return shape("stream", *stream, "a boolean");
            }
            out_.stream = stream->GetBool();
        }
    }
    const Value* p = member(doc, "parameters");
    do_sample_ = p == nullptr;  // the whole object absent: GenerateParameters' sampling default
    if (p != nullptr) {
        if (!p->IsObject()) {
            return shape("parameters", *p, "struct GenerateParameters");
        }
        if (TgiError e = parameters(*p); e.kind != TgiError::kNone) {
            return e;
        }
    }
    auto invalid = [](std::string message) {
        return TgiError{TgiError::kValidation, "Input validation error: " + std::move(message)};
    };
    if (auto m = tgi_check_sampling(temperature_, top_p_, top_k_, max_new_tokens_)) {
        return invalid(*m);
    }
    if (repetition_penalty_ && *repetition_penalty_ <= 0) {
        return invalid("`repetition_penalty` must be strictly positive");
    }
    if (frequency_ && !(*frequency_ >= -2.0 && *frequency_ <= 2.0)) {
        return invalid("`frequency_penalty` must be >= -2.0 and <= 2.0");
    }
    if (typical_p_ && !(*typical_p_ > 0.0 && *typical_p_ < 1.0)) {
        return invalid("`typical_p` must be > 0.0 and < 1.0");
    }
    if (out_.stop.strings.size() > kMaxStopSequences) {
        return invalid("`stop` supports up to " + std::to_string(kMaxStopSequences) +
                       " stop sequences. Given: " + std::to_string(out_.stop.strings.size()));
    }
    if (auto m = tgi_check_top_n(top_n_tokens_)) {
        return invalid(*m);
    }
    out_.top_n_tokens = static_cast<int>(top_n_tokens_.value_or(0));
    if (out_.inputs.empty()) {
        return invalid("`inputs` cannot be empty");
    }
    out_.key = prompt_from_text(out_.inputs);
    const int max_total = options_.max_model_len;
    const int max_input = max_total - 1;
    if (out_.key.tokens > max_input) {
        return invalid("`inputs` must have less than " + std::to_string(max_input) +
                       " tokens. Given: " + std::to_string(out_.key.tokens));
    }
    const std::int64_t budget = max_new_tokens_.value_or(max_total - out_.key.tokens);
    if (out_.key.tokens + budget > max_total) {
        return invalid("`inputs` tokens + `max_new_tokens` must be <= " +
                       std::to_string(max_total) + ". Given: " + std::to_string(out_.key.tokens) +
                       " `inputs` tokens and " + std::to_string(budget) + " `max_new_tokens`");
    }
    out_.max_new_tokens = static_cast<int>(budget);
    if (grammar_invalid_) {
        return invalid(std::move(*grammar_invalid_));
    }
    out_.sampling = do_sample_ || temperature_ || top_p_ || top_k_ || typical_p_;
    // TGI keeps the stop sequence (and the rest of its token) in the text.
    out_.stop.keep_stop_string = true;
    return {};
}

TgiError Parser::parameters(const Value& p) {
    double number = 0;
    std::int64_t integer = 0;
    for (auto [name, target] : {std::pair{"temperature", &temperature_},
                                {"top_p", &top_p_},
                                {"typical_p", &typical_p_},
                                {"repetition_penalty", &repetition_penalty_},
                                {"frequency_penalty", &frequency_}}) {
        const Lookup got = get_number(p, name, number);
        if (got == Lookup::kWrongType) {
            return shape(std::string("parameters.") + name, *member(p, name), "f32");
        }
        if (got == Lookup::kOk) {
            *target = number;
        }
    }
    for (auto [name, target, unsigned_] : {std::tuple{"top_k", &top_k_, false},
                                           {"max_new_tokens", &max_new_tokens_, true},
                                           {"top_n_tokens", &top_n_tokens_, true}}) {
        const Value* v = member(p, name);
        if (v == nullptr) {
            continue;
        }
        if (!v->IsInt64() || (unsigned_ && v->GetInt64() < 0)) {
            if (v->IsInt64()) {
                return {TgiError::kShape,
                        "Failed to deserialize the JSON body into the target type: parameters." +
                            std::string(name) + ": invalid value: integer `" +
                            std::to_string(v->GetInt64()) + "`, expected u32" +
                            serde_position(body_)};
            }
            return shape(std::string("parameters.") + name, *v, unsigned_ ? "u32" : "i32");
        }
        *target = v->GetInt64();
    }
    for (auto [name, target] : {std::pair{"details", &out_.details},
                                {"decoder_input_details", &out_.decoder_input_details},
                                {"do_sample", &do_sample_},
                                {"return_full_text", &out_.return_full_text}}) {
        if (get_bool(p, name, *target) == Lookup::kWrongType) {
            return shape(std::string("parameters.") + name, *member(p, name), "a boolean");
        }
    }
    if (const Value* seed = member(p, "seed")) {
        if (!seed->IsUint64()) {
            return shape("parameters.seed", *seed, "u64");
        }
        integer = static_cast<std::int64_t>(seed->GetUint64());
        out_.seed = seed->GetUint64();
        out_.stop.seed = integer;
    }
    if (const Value* stop = member(p, "stop")) {
        if (!stop->IsArray()) {
            return shape("parameters.stop", *stop, "a sequence");
        }
        for (const Value& s : stop->GetArray()) {
            if (!s.IsString()) {
                return shape("parameters.stop", s, "a string");
            }
            out_.stop.strings.emplace_back(s.GetString(), s.GetStringLength());
        }
    }
    FormatAsk grammar =
        read_tgi_grammar(member(p, "grammar"), "parameters.grammar", serde_position(body_));
    if (grammar.error && grammar.error->kind == FormatError::Kind::kShape) {
        return {TgiError::kShape, "Failed to deserialize the JSON body into the target type: " +
                                      grammar.error->where + ": " + grammar.error->message};
    }
    if (grammar.error) {
        grammar_invalid_ = std::move(grammar.error->message);
    }
    out_.format = std::move(grammar.text);
    return {};
}

}  // namespace

std::optional<std::string> tgi_check_top_n(std::optional<std::int64_t> top_n_tokens) {
    if (top_n_tokens && *top_n_tokens > kTgiMaxTopNTokens) {
        return "`top_n_tokens` must be >= 0 and <= " + std::to_string(kTgiMaxTopNTokens) +
               ". Given: " + std::to_string(*top_n_tokens);
    }
    return std::nullopt;
}

std::optional<std::string> tgi_check_sampling(std::optional<double> temperature,
                                              std::optional<double> top_p,
                                              std::optional<std::int64_t> top_k,
                                              std::optional<std::int64_t> max_new_tokens) {
    if (temperature && *temperature <= 0.0) {
        return "`temperature` must be strictly positive";
    }
    if (top_p && !(*top_p > 0.0 && *top_p < 1.0)) {
        return "`top_p` must be > 0.0 and < 1.0";
    }
    if (top_k && *top_k <= 0) {
        return "`top_k` must be strictly positive";
    }
    if (max_new_tokens && *max_new_tokens == 0) {
        return "`max_new_tokens` must be strictly positive";
    }
    return std::nullopt;
}

TgiError parse_tgi_request(std::string_view body, const rapidjson::Document& doc, bool doc_ok,
                           bool compat, const Options& options, TgiRequest& out) {
    if (!doc_ok) {
        const std::size_t at = std::min<std::size_t>(doc.GetErrorOffset(), body.size());
        return {
            TgiError::kSyntax,
            "Failed to parse the request body as JSON: " +
                std::string(at >= body.size() ? "EOF while parsing a value" : "expected value") +
                serde_position(body.substr(0, at + (at < body.size() ? 1 : 0)))};
    }
    Parser parser(body, options, out);
    return parser.run(doc, compat);
}

TgiError validate_tgi_stream(const TgiRequest& req) {
    if (req.decoder_input_details) {
        return {TgiError::kValidation,
                "Input validation error: `decoder_input_details` == true is not supported when "
                "streaming tokens"};
    }
    return {};
}

}  // namespace infergate::emulator
