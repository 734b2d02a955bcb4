// passthrough_finish: how a whole answer relayed as it came ended, for the metrics, read from
// the raw bytes in every spelling a server may write (spaces, key order, several choices,
// SGLang's object), and never from text that merely quotes the key.

#include <doctest/doctest.h>

#include "translators/passthrough.hpp"

using infergate::canonical::FinishKind;
using infergate::translators::passthrough_finish;

TEST_CASE("passthrough_finish: the answer's finish, tool_calls first") {
    CHECK(passthrough_finish(R"({"choices":[{"index":0,"finish_reason":"stop"}]})") ==
          FinishKind::stop);
    CHECK(
        passthrough_finish("{\"choices\": [{\"finish_reason\" :\r\n \"length\", \"index\": 0}]}") ==
        FinishKind::length);
    // n > 1: a tool call in any choice names the answer.
    CHECK(passthrough_finish(
              R"({"choices":[{"finish_reason":"stop"},{"finish_reason":"tool_calls"}]})") ==
          FinishKind::tool_calls);
    CHECK(passthrough_finish(R"({"choices":[{"finish_reason":"function_call"}]})") ==
          FinishKind::tool_calls);
    // SGLang's meta_info.finish_reason is an object.
    CHECK(passthrough_finish(
              R"({"text":"x","meta_info":{"finish_reason": {"type": "length", "length": 8}}})") ==
          FinishKind::length);
    // null (not finished), absent, or only in the text: not counted.
    CHECK(passthrough_finish(R"({"choices":[{"finish_reason":null}]})") == FinishKind::none);
    CHECK(passthrough_finish(R"({"choices":[]})") == FinishKind::none);
    CHECK(passthrough_finish(
              R"({"choices":[{"message":{"content":"say \"finish_reason\":\"tool_calls\""},)"
              R"("finish_reason":"stop"}]})") == FinishKind::stop);
    CHECK(passthrough_finish("") == FinishKind::none);
    CHECK(passthrough_finish(R"({"finish_reason")") == FinishKind::none);
    CHECK(passthrough_finish(R"({"finish_reason":"tool_)") == FinishKind::none);
}
