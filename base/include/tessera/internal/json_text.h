#pragma once
// Reading JSON documents (target descriptions, schedules) safely: nesting bounded before
// nlohmann sees the text, parse errors as "origin:line:column: why" without nlohmann's
// exception names, and values quoted in messages cut to a readable length. Header-only, so both
// chipsim and dsl (which share no library) use the one copy; include it only from .cpp files.
#include <nlohmann/json.hpp>

#include <string>

#include "tessera/error.h"
#include "tessera/limits.h"

namespace tessera::internal {

/// "line:column" (1-based) of byte `offset` of `text`.
inline std::string json_line_column(const std::string &text, size_t offset) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < offset && i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++line;
            column = 1;
        } else {
            ++column;
        }
    }
    return std::to_string(line) + ":" + std::to_string(column);
}

/// Parses `text`, throwing E("<origin>:<line>:<column>: ...") when it is not JSON or nests
/// deeper than limits::kMaxJsonDepth. nlohmann parses iteratively but prints and compares
/// values recursively, so a file of 200,000 '[' would overflow the stack later, in whatever
/// first prints it (an error message); the depth is therefore checked here, on the text.
template <typename E = Error>
nlohmann::json parse_json_text(const std::string &text, const std::string &origin) {
    int depth = 0;
    bool in_string = false, escaped = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (escaped) escaped = false;
            else if (c == '\\') escaped = true;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > limits::kMaxJsonDepth)
                throw E(origin + ":" + json_line_column(text, i) + ": arrays and objects nest deeper than " +
                        std::to_string(limits::kMaxJsonDepth) + " levels, the most Tessera reads (targets and schedules nest at most 6): is this the " +
                        "right file?");
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error &e) {
        // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 5: why".
        std::string what = e.what();
        const size_t column = what.find("column ");
        const size_t colon = column == std::string::npos ? std::string::npos : what.find(": ", column);
        if (colon != std::string::npos) what = what.substr(colon + 2);
        const size_t at = e.byte > 0 ? e.byte - 1 : 0;
        throw E(origin + ":" + json_line_column(text, at) + ": not valid JSON: " + what);
    } catch (const nlohmann::json::out_of_range &e) {
        // The lexer accepts any digits, then throws out_of_range.406 "number overflow parsing
        // '<token>'" for a number beyond a double's range (1E400); it carries no byte offset, so
        // the token is looked up in the text to say where (found by fuzz_target_json).
        std::string what = e.what();
        const size_t open = what.find("parsing '");
        const std::string token = open == std::string::npos ? "" : what.substr(open + 9, what.size() - open - 10);
        const size_t at = token.empty() ? std::string::npos : text.find(token);
        std::string shown = token.size() > 40 ? token.substr(0, 40) + "..." : token;
        throw E(origin + (at == std::string::npos ? "" : ":" + json_line_column(text, at)) + ": the number " + shown +
                " is too large to represent (beyond a double's range, about 1.8e308)");
    } catch (const nlohmann::json::exception &e) {
        // No other nlohmann exception is known to escape parse(); should one appear, it is still
        // this file's error, not a crash.
        std::string what = e.what();
        const size_t bracket = what.find("] ");
        if (bracket != std::string::npos) what = what.substr(bracket + 2);
        throw E(origin + ": not valid JSON: " + what);
    }
}

/// A value as JSON text for an error message: at most `max_chars` characters (with "..." when
/// cut), invalid UTF-8 replaced rather than thrown on.
inline std::string json_excerpt(const nlohmann::json &v, size_t max_chars = 60) {
    std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (s.size() > max_chars) s = s.substr(0, max_chars) + "...";
    return s;
}

/// Reads an integer value into `out`; false when `v` is not an integer or does not fit int64_t
/// (nlohmann keeps integers above INT64_MAX unsigned, and get<int64_t>() would wrap them).
inline bool json_int64(const nlohmann::json &v, int64_t &out) {
    if (v.is_number_unsigned()) {
        if (v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) return false;
        out = int64_t(v.get<uint64_t>());
        return true;
    }
    if (!v.is_number_integer()) return false;
    out = v.get<int64_t>();
    return true;
}

} // namespace tessera::internal
