// The emulator's embedding model and the ways the servers print its vectors.
//
// A token's vector is a pure function of its id and the dimension (uniform in [-1, 1) from a
// hash); a sequence's vector pools its tokens' (mean, first or last token); dimensions are cut
// (Matryoshka-style: the first N) and the result L2-normalised unless asked otherwise. Every value
// is a float32 computed through doubles in a fixed order, so the same tokens give the same vector
// in every dialect and on every machine, whatever the server's own arithmetic would round
// differently.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "emulator/json_util.hpp"

namespace infergate::emulator {

enum class Pooling : std::uint8_t;  // options.hpp

// "mean", "cls", "last", "none".
std::string_view pooling_name(Pooling pooling);

// One token's vector of `dim` values.
void token_vector(std::int64_t id, int dim, std::vector<float>& out);
// The pooled vector of `ids` (kNone: pools nothing, use token_vector per token). Empty ids give
// zeros.
std::vector<float> pooled_vector(std::span<const std::int64_t> ids, int dim, Pooling pooling);
// Keeps the first `dims` values (0, or more than there are: all), then L2-normalises when
// `normalize` (a zero vector stays zero).
void finish_vector(std::vector<float>& v, int dims, bool normalize);

// How a server prints a float32 of a vector: the digits are the shortest that round-trip to the
// value read as a double (Python, orjson, nlohmann, Go's float64) or as a float32 (Go's float32,
// serde's f32); the layout (fixed or exponent, ".0", exponent digits) is the printer's own.
enum class NumberStyle {
    kPython,    // repr(float): exponent below 1e-4 or from 1e16, "1e-05"
    kOrjson,    // orjson >= 3.11.7 (zmij): exponent below 1e-5 or from 1e16, "1e-06", "1e+16"
    kNlohmann,  // nlohmann::json dump: exponent below 1e-4 or from 1e15, "1e-05"
    kGo32,      // encoding/json float32: exponent below 1e-6 or from 1e21, "1e-07", no ".0"
    kGo64,      // encoding/json float64 (of the float32 widened)
    kRustF32,   // serde_json f32 (ryu): exponent below 1e-6 or from 1e13, "1e-7"
};
void append_number(std::string& out, float value, NumberStyle style);
// A JSON array of the values, each as `style` prints it.
void write_vector(JsonWriter& w, std::span<const float> values, NumberStyle style);

// The values' bytes as float32, float16 or bfloat16 (vLLM's embed_dtype; the halves rounded to
// nearest even), little-endian unless `big_endian`.
enum class ValueType { kFloat32, kFloat16, kBfloat16 };
std::string value_bytes(std::span<const float> values, ValueType type, bool big_endian = false);
// Standard base64 with padding: OpenAI's encoding_format "base64" of value_bytes().
std::string base64(std::string_view bytes);

}  // namespace infergate::emulator
