// translators/canonical/accumulate.cpp: a gathered stream's whole answer, a stream's token tally.

#include "translators/canonical/accumulate.hpp"

#include <doctest/doctest.h>

using namespace infergate::canonical;

namespace {

StreamEvent chunk(int index, std::string text, std::optional<int64_t> running = std::nullopt) {
    StreamEvent ev;
    ev.index = index;
    ev.text = std::move(text);
    ev.usage.completion_tokens = running;
    return ev;
}

}  // namespace

TEST_CASE("apply_to_result: choices by index, text, ids, logprob entries, finish and counts") {
    GenerationResult r;
    StreamEvent a = chunk(1, "b", 1);
    a.token_ids = {7};
    a.logprobs.resize(1);
    a.logprobs[0].token = "b";
    a.prompt_logprobs.resize(2);
    apply_to_result(a, r);
    apply_to_result(chunk(0, "x"), r);
    StreamEvent end = chunk(1, "c", 2);
    end.token_ids = {8};
    end.finish = FinishReason{FinishKind::length};
    end.usage.prompt_tokens = 5;
    apply_to_result(end, r);
    REQUIRE(r.choices.size() == 2);
    CHECK(r.choices[0].index == 0);
    CHECK(r.choices[0].text == "x");
    CHECK(r.choices[1].text == "bc");
    CHECK(r.choices[1].token_ids == std::vector<int64_t>{7, 8});
    CHECK(r.choices[1].logprobs.size() == 1);
    CHECK(r.choices[1].prompt_logprobs.size() == 2);
    CHECK(r.choices[1].finish.kind == FinishKind::length);
    CHECK(r.choices[1].usage.completion_tokens == 2);
    CHECK(r.choices[1].usage.prompt_tokens == 5);

    StreamEvent usage;
    usage.type = StreamEvent::Type::usage;
    usage.usage.completion_tokens = 3;
    apply_to_result(usage, r);
    CHECK(r.usage.completion_tokens == 3);

    apply_to_result(chunk(-1, "bad"), r);  // never sizes the list from a negative index
    CHECK(r.choices.size() == 2);
}

TEST_CASE("TokenTally: running counts, chunks without counts, prompts once per n choices") {
    TokenTally t;
    t.n = 2;
    CHECK(t.add(chunk(0, "a", 2)) == 2);
    CHECK(t.add(chunk(0, "b", 3)) == 1);
    CHECK(t.add(chunk(1, "c")) == 1);  // no running count from this backend: one per chunk
    CHECK(t.add(chunk(1, "")) == 0);
    StreamEvent p0 = chunk(0, "");
    p0.usage.prompt_tokens = 4;
    StreamEvent p1 = chunk(1, "");
    p1.usage.prompt_tokens = 4;
    t.add(p0);
    t.add(p1);
    Usage u = t.total();
    CHECK(u.completion_tokens == 3);  // choice 1 never reported a count
    CHECK(u.prompt_tokens == 4);      // one prompt, two choices
    StreamEvent fin;
    fin.type = StreamEvent::Type::usage;
    fin.usage.completion_tokens = 9;
    fin.usage.prompt_tokens = 4;
    CHECK(t.add(fin) == 0);
    CHECK(t.total().completion_tokens == 9);  // the backend's own report wins
    CHECK(t.add(chunk(-1, "x")) == 0);
}
