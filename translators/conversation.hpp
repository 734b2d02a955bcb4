#pragma once
// Conversation state a client dialect keeps on the server (the Responses API's
// previous_response_id, item_reference and GET /v1/responses/{id}): the interface between the
// dialect's codec, which knows what a turn is, and the proxy's store (proxy/response_store.*),
// which only keeps strings. docs/dialects.md, "Responses API".

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace infergate::translators {

// What the store can tell a decoder. Implementations are safe to call from any worker.
class ConversationLookup {
public:
    // The items (compact JSON) of the conversation up to and including turn `id`: every turn's
    // input items and then its output items, oldest turn first. nullopt when `id`, or a turn it
    // continues, is not stored (never stored, deleted, or evicted).
    virtual std::optional<std::vector<std::string>> conversation(std::string_view id) const = 0;
    // One stored item (an input item the client gave an id, or an output item) by its id.
    virtual std::optional<std::string> item(std::string_view id) const = 0;

protected:
    ~ConversationLookup() = default;
};

// One answered turn to keep.
struct StoredTurn {
    std::string id;           // the response's id
    std::string previous_id;  // the turn it continues ("" = none)
    // Who may read, continue or delete it: the client key's configured name ("" without keys).
    // Set by the proxy, not the codec.
    std::string owner;
    std::string response;     // the response object, as GET /v1/responses/{id} answers it
    // This turn's items, (id, compact JSON): its input items (the id empty when the client
    // gave none), then its output items from `output_from` on.
    std::vector<std::pair<std::string, std::string>> items;
    size_t output_from = 0;
};

}  // namespace infergate::translators
