// File names on Linux are bytes, not text: a name from a Latin-1 system is not valid UTF-8, and
// JSON (config.json, events.jsonl, checkpoint metadata) can only hold UTF-8.
#pragma once

#include <string>
#include <string_view>

namespace ampgan {

// True if s is well-formed UTF-8 (no overlong forms, surrogates or code points above U+10FFFF).
bool is_valid_utf8(std::string_view s);

// s with each byte that is not part of well-formed UTF-8 written as \xNN: for messages.
std::string escape_invalid_utf8(std::string_view s);

}  // namespace ampgan
