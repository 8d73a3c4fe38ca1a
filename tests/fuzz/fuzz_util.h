#pragma once
// Shared by the libFuzzer targets: what "refused" and "round-trips" mean. A reader may refuse
// its input only with a tessera::Error; any other exception escaping, or a round trip that
// changes the value, aborts, which libFuzzer reports as a crash with the input that caused it.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "tessera/error.h"

namespace tessera::fuzz {

[[noreturn]] inline void die(const std::string &why) {
    std::fprintf(stderr, "fuzz check failed: %s\n", why.c_str());
    std::abort();
}

/// Runs `f`; true when it returned, false when it refused with tessera::Error; aborts on any
/// other exception (std::bad_alloc, std::out_of_range, nlohmann's, ...).
template <typename F> bool accepted(F &&f) {
    try {
        f();
        return true;
    } catch (const Error &) {
        return false;
    } catch (const std::exception &e) {
        die(std::string("a non-tessera exception escaped: ") + e.what());
    } catch (...) {
        die("an unknown exception escaped");
    }
}

inline void require(bool ok, const std::string &what) {
    if (!ok) die(what);
}

} // namespace tessera::fuzz
