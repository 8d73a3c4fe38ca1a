#pragma once
// The one exception type of Tessera. Every misuse — of the DSL, a schedule, a target file, a
// chip program — throws tessera::Error (or a subclass) with a message that names what is wrong
// and says what to do; nothing aborts.
#include <stdexcept>
#include <string>

namespace tessera {

/// Base of every error Tessera reports to its user.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// A broken invariant inside Tessera itself (a bug in Tessera, not in the user's program).
class InternalError : public Error {
public:
    explicit InternalError(const std::string &what) : Error("internal error: " + what) {}
};

} // namespace tessera
