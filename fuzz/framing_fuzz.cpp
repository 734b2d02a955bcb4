// libFuzzer target for the SSE and record scanners. The property that matters for a proxy is
// that network chunking is invisible: for any bytes, feeding them split at arbitrary points gives
// exactly the events (and the same overflow verdict) as feeding them at once. Split-invariance
// alone cannot see a rule that is wrong the same way for every split (say, CRLF read as two line
// ends), so the one-shot result is also compared with a deliberately naive whole-buffer model of
// the same rules. AddressSanitizer covers the memory side.
//
// The whole input is the stream, so the seed corpus is plain wire samples. Split points and the
// buffer limit are drawn from a generator seeded with a hash of the input: any change to the
// input also explores other splits and limits.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "translators/framing/framing.hpp"

namespace {

using infergate::framing::RecordScanner;
using infergate::framing::SseEvent;
using infergate::framing::SseScanner;

class Rng {
public:
    explicit Rng(uint64_t seed) : state_(seed | 1) {}
    uint64_t next() {  // xorshift64*: small, fast, good enough to pick cut points
        state_ ^= state_ >> 12;
        state_ ^= state_ << 25;
        state_ ^= state_ >> 27;
        return state_ * 0x2545F4914F6CDD1DULL;
    }
    size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }

private:
    uint64_t state_;
};

uint64_t fnv1a(std::string_view bytes) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : bytes) {
        h = (h ^ c) * 0x100000001b3ULL;
    }
    return h;
}

void require(bool ok) {
    if (!ok) {
        std::abort();  // libFuzzer reports the crash and saves the input
    }
}

// Piece lengths covering `size` bytes: random, with empty pieces and single bytes well
// represented (a CR at the end of one piece and an LF at the start of the next is the case that
// breaks naive scanners).
std::vector<size_t> random_cuts(size_t size, Rng& rng) {
    std::vector<size_t> pieces;
    size_t done = 0;
    while (done < size) {
        size_t len = 0;
        switch (rng.below(4)) {
            case 0:
                len = 0;
                break;
            case 1:
                len = 1;
                break;
            case 2:
                len = 1 + rng.below(8);
                break;
            default:
                len = rng.below(size - done + 1);
                break;
        }
        len = std::min(len, size - done);
        pieces.push_back(len);
        done += len;
    }
    return pieces;
}

// ---- Reference models: whole input, byte loops, no buffering, no cleverness ---------------

struct ModelSse {
    std::vector<SseEvent> events;
    bool overflowed = false;
};

std::string_view without_bom(std::string_view in) {
    return in.starts_with("\xEF\xBB\xBF") ? in.substr(3) : in;
}

ModelSse model_sse(std::string_view in, size_t limit, bool comments) {
    in = without_bom(in);
    ModelSse m;
    std::string name;
    std::string data;
    bool has_data = false;
    bool error_data = false;  // the event's data came from `error:` lines (llama-server)
    size_t i = 0;
    while (i < in.size()) {
        size_t j = i;
        while (j < in.size() && in[j] != '\r' && in[j] != '\n') {
            ++j;
        }
        const std::string_view line = in.substr(i, j - i);
        if (line.size() > limit) {
            m.overflowed = true;
            return m;
        }
        if (line.empty()) {
            if (has_data) {
                m.events.push_back(
                    SseEvent{name, error_data ? infergate::framing::error_envelope(data) : data});
            }
            name.clear();
            data.clear();
            has_data = false;
            error_data = false;
        } else if (line[0] == ':') {
            if (comments) {
                m.events.push_back(SseEvent{"", std::string(line.substr(1)), true});
            }
        } else {
            size_t colon = 0;
            while (colon < line.size() && line[colon] != ':') {
                ++colon;
            }
            const std::string field(line.substr(0, colon));
            std::string value;
            if (colon < line.size()) {
                value = std::string(line.substr(colon + 1));
                if (!value.empty() && value[0] == ' ') {
                    value.erase(0, 1);
                }
            }
            const bool error_line = field == "error" && !(has_data && !error_data);
            if (field == "data" || error_line) {
                error_data = error_data || error_line;
                if (data.size() + value.size() + (has_data ? 1 : 0) > limit) {
                    m.overflowed = true;
                    return m;
                }
                data += (has_data ? "\n" : "") + value;
                has_data = true;
            } else if (field == "event") {
                name = value;
            }
        }
        if (j == in.size()) {
            break;  // unterminated last line, handled like any other line
        }
        i = j + ((in[j] == '\r' && j + 1 < in.size() && in[j + 1] == '\n') ? 2 : 1);
    }
    if (has_data) {
        m.events.push_back(
            SseEvent{name, error_data ? infergate::framing::error_envelope(data) : data});
    }
    return m;
}

bool same_events(const std::vector<SseEvent>& a, const std::vector<SseEvent>& b) {
    if (a.size() != b.size()) {
        return false;
    }
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].event != b[i].event || a[i].data != b[i].data || a[i].comment != b[i].comment) {
            return false;
        }
    }
    return true;
}

struct ModelRecords {
    std::vector<std::string> records;
    bool overflowed = false;
};

ModelRecords model_records(std::string_view in, size_t limit) {
    in = without_bom(in);
    ModelRecords m;
    size_t i = 0;
    while (i < in.size()) {
        size_t j = i;
        while (j < in.size() && in[j] != '\n' && in[j] != '\0') {
            ++j;
        }
        std::string record(in.substr(i, j - i));
        if (record.size() > limit) {
            m.overflowed = true;
            return m;
        }
        if (!record.empty() && record.back() == '\r') {
            record.pop_back();
        }
        if (record.find_first_not_of(" \t\r\f\v") != std::string::npos) {
            m.records.push_back(record);
        }
        i = j + 1;
    }
    return m;
}

// ---- Scanner runs ---------------------------------------------------------------------------

struct SseOutcome {
    std::vector<SseEvent> events;
    bool partial_before_finish = false;
    bool overflowed = false;
};

template <typename Feeder>
SseOutcome run_sse(size_t max_buffer, bool comments, Feeder&& feed_all) {
    SseScanner scanner(max_buffer, comments);
    SseOutcome r;
    feed_all([&](std::string_view piece) { scanner.feed(piece, r.events); });
    r.partial_before_finish = scanner.has_partial();
    scanner.finish(r.events);
    r.overflowed = scanner.overflowed();
    require(!scanner.has_partial());
    return r;
}

bool same(const SseOutcome& a, const SseOutcome& b) {
    return a.overflowed == b.overflowed && a.partial_before_finish == b.partial_before_finish &&
           same_events(a.events, b.events);
}

struct RecordOutcome {
    std::vector<std::string> records;
    bool overflowed = false;
};

template <typename Feeder>
RecordOutcome run_records(size_t max_buffer, Feeder&& feed_all) {
    RecordScanner scanner(max_buffer);
    RecordOutcome r;
    feed_all([&](std::string_view piece) { scanner.feed(piece, r.records); });
    scanner.finish(r.records);
    r.overflowed = scanner.overflowed();
    return r;
}

void check_sse(std::string_view input, size_t max_buffer, Rng& rng) {
    const bool comments = rng.below(2) == 1;
    const auto once = run_sse(max_buffer, comments, [&](auto feed) { feed(input); });
    const ModelSse model = model_sse(input, max_buffer, comments);
    require(once.overflowed == model.overflowed && same_events(once.events, model.events));
    for (const SseEvent& e : once.events) {
        // Line ends never leak into a field; an event name is a single line.
        require(e.event.find_first_of("\r\n") == std::string::npos);
        require(e.data.find('\r') == std::string::npos);
        // (An `error:` field's value is wrapped in an envelope after the limit was checked.)
        require(e.data.size() <= max_buffer || e.data.starts_with("{\"error\":"));
    }
    const auto bytewise = run_sse(max_buffer, comments, [&](auto feed) {
        for (size_t i = 0; i < input.size(); ++i) {
            feed(input.substr(i, 1));
        }
    });
    require(same(once, bytewise));
    const std::vector<size_t> cuts = random_cuts(input.size(), rng);
    const auto chunked = run_sse(max_buffer, comments, [&](auto feed) {
        size_t at = 0;
        for (size_t len : cuts) {
            feed(input.substr(at, len));
            at += len;
        }
    });
    require(same(once, chunked));
}

void check_records(std::string_view input, size_t max_buffer, Rng& rng) {
    const auto once = run_records(max_buffer, [&](auto feed) { feed(input); });
    const ModelRecords model = model_records(input, max_buffer);
    require(once.overflowed == model.overflowed && once.records == model.records);
    for (const std::string& r : once.records) {
        require(!r.empty());
        require(r.find('\n') == std::string::npos);
        require(r.find('\0') == std::string::npos);
        require(r.size() <= max_buffer);
    }
    const auto bytewise = run_records(max_buffer, [&](auto feed) {
        for (size_t i = 0; i < input.size(); ++i) {
            feed(input.substr(i, 1));
        }
    });
    require(once.records == bytewise.records && once.overflowed == bytewise.overflowed);
    const std::vector<size_t> cuts = random_cuts(input.size(), rng);
    const auto chunked = run_records(max_buffer, [&](auto feed) {
        size_t at = 0;
        for (size_t len : cuts) {
            feed(input.substr(at, len));
            at += len;
        }
    });
    require(once.records == chunked.records && once.overflowed == chunked.overflowed);
}

// What the writers produce, the scanner reads back, for any single-line name and payload.
void check_writer_round_trip(std::string_view input) {
    const size_t half = input.size() / 2;
    const std::string_view name = input.substr(0, half);
    const std::string_view json = input.substr(half);
    if (name.find_first_of("\r\n") != std::string_view::npos ||
        json.find_first_of("\r\n") != std::string_view::npos) {
        return;
    }
    std::string wire;
    infergate::framing::write_sse_event(name, json, wire);
    infergate::framing::write_sse_data(json, wire);
    SseScanner scanner;
    std::vector<SseEvent> events;
    scanner.feed(wire, events);
    require(!scanner.has_partial());
    require(events.size() == 2);
    require(events[0].event == name && events[0].data == json);
    require(events[1].event.empty() && events[1].data == json);

    std::string nd;
    infergate::framing::write_ndjson(json, nd);
    RecordScanner records;
    std::vector<std::string> out;
    records.feed(nd, out);
    require(!records.has_partial());
    // Records drop blank lines, a trailing CR and a BOM at the start of the stream by design;
    // only NUL-free payloads round-trip.
    if (json.find('\0') == std::string_view::npos && !json.empty() && json.back() != '\r' &&
        !json.starts_with("\xEF\xBB\xBF") &&
        json.find_first_not_of(" \t\f\v") != std::string_view::npos) {
        require(out.size() == 1 && out[0] == json);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    Rng rng(fnv1a(input));
    // Half the runs with a limit small enough to be hit, so the overflow path is compared too.
    const size_t small_limit = 1 + rng.below(64);
    const size_t limits[] = {small_limit, size_t{4} * 1024 * 1024};
    for (size_t limit : limits) {
        check_sse(input, limit, rng);
        check_records(input, limit, rng);
    }
    check_writer_round_trip(input);
    return 0;
}
