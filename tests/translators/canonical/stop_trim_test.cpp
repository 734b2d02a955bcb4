#include <doctest/doctest.h>

#include "translators/canonical/stop_trim.hpp"

using namespace infergate::canonical;

namespace {

StreamEvent chunk(std::string text, bool stop = false) {
    StreamEvent ev;
    ev.text = std::move(text);
    if (stop) {
        ev.finish = FinishReason{};
        ev.finish->kind = FinishKind::stop;
    }
    return ev;
}

}  // namespace

TEST_CASE("a streamed stop string never reaches the client, not even its first bytes") {
    StopTrimmer t({"\n\n", " to"});
    std::string seen;
    for (auto [text, stop] : {std::pair{std::string(" about"), false}, {" when\n", false},
                              {"x", false}, {" t", false}, {"o", true}}) {
        StreamEvent ev = chunk(text, stop);
        t.apply(ev);
        if (stop) {
            REQUIRE(ev.finish);
            CHECK(ev.finish->matched_text == " to");
        }
        seen += ev.text;
    }
    CHECK(seen == " about when\nx");
}

TEST_CASE("held text is released when it turns out not to be a stop") {
    StopTrimmer t({"END"});
    StreamEvent a = chunk("the E");
    t.apply(a);
    CHECK(a.text == "the ");
    StreamEvent b = chunk("ND? no, ENDS");
    t.apply(b);
    CHECK(b.text == "END? no, ENDS");
    StreamEvent c = chunk(" E");
    t.apply(c);
    CHECK(c.text == " ");
    std::vector<StreamEvent> rest;
    t.flush(rest);
    REQUIRE(rest.size() == 1);
    CHECK(rest[0].text == "E");
}

TEST_CASE("a length finish keeps text that merely looks like a stop") {
    StopTrimmer t({" to"});
    StreamEvent ev = chunk("go to");
    ev.finish = FinishReason{};
    ev.finish->kind = FinishKind::length;
    t.apply(ev);
    CHECK(ev.text == "go to");
}

TEST_CASE("whole answers lose the stop string they end with (the longest one)") {
    StopTrimmer t({"o", " to"});
    GenerationResult r;
    r.choices.resize(2);
    r.choices[0].text = "went to";
    r.choices[0].finish.kind = FinishKind::stop;
    r.choices[1].text = "went to";
    r.choices[1].finish.kind = FinishKind::length;
    t.apply(r);
    CHECK(r.choices[0].text == "went");
    CHECK(r.choices[0].finish.matched_text == " to");
    CHECK(r.choices[1].text == "went to");
}
