#include "translators/canonical/stop_trim.hpp"

#include <algorithm>

namespace infergate::canonical {

std::string StopTrimmer::strip(std::string& text) const {
    const std::string* best = nullptr;
    for (const std::string& s : stops_) {
        if (!s.empty() && text.ends_with(s) && (best == nullptr || s.size() > best->size())) {
            best = &s;
        }
    }
    if (best == nullptr) {
        return {};
    }
    text.resize(text.size() - best->size());
    return *best;
}

size_t stop_prefix_tail(std::string_view text, const std::vector<std::string>& stops) {
    size_t longest = 0;
    for (const std::string& s : stops) {
        for (size_t k = std::min(s.size(), text.size()); k > longest; --k) {
            if (text.compare(text.size() - k, k, s, 0, k) == 0) {
                longest = k;
                break;
            }
        }
    }
    return longest;
}

void StopTrimmer::apply(StreamEvent& ev) {
    if (ev.type != StreamEvent::Type::chunk || stops_.empty() || ev.index < 0) {
        return;
    }
    const size_t i = static_cast<size_t>(ev.index);
    if (held_.size() <= i) {
        held_.resize(i + 1);
    }
    std::string text = std::move(held_[i]);
    held_[i].clear();
    text += ev.text;
    if (ev.finish) {
        if (ev.finish->kind == FinishKind::stop) {
            std::string matched = strip(text);
            if (!matched.empty() && !ev.finish->matched_text && !ev.finish->matched_token) {
                ev.finish->matched_text = std::move(matched);
            }
        }
        ev.text = std::move(text);
        return;
    }
    const size_t hold = stop_prefix_tail(text, stops_);
    held_[i].assign(text, text.size() - hold, hold);
    text.resize(text.size() - hold);
    ev.text = std::move(text);
}

void StopTrimmer::flush(std::vector<StreamEvent>& out) {
    for (size_t i = 0; i < held_.size(); ++i) {
        if (!held_[i].empty()) {
            StreamEvent ev;
            ev.index = static_cast<int>(i);
            ev.text = std::move(held_[i]);
            held_[i].clear();
            out.push_back(std::move(ev));
        }
    }
}

void StopTrimmer::apply(GenerationResult& result) const {
    if (stops_.empty()) {
        return;
    }
    for (Choice& c : result.choices) {
        if (c.finish.kind == FinishKind::stop) {
            std::string matched = strip(c.text);
            if (!matched.empty() && !c.finish.matched_text && !c.finish.matched_token) {
                c.finish.matched_text = std::move(matched);
            }
        }
    }
}

}  // namespace infergate::canonical
