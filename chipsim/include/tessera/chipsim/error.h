#pragma once
// chipsim's error types. All derive from tessera::Error (header-only), so a caller catches one
// type for every misuse in Tessera; the subclasses let tests and tools tell the source apart.
#include <tessera/error.h>

namespace tessera::chipsim {

/// A bad target description: the message names the file, the field, its value and the range.
class TargetError : public Error {
public:
    using Error::Error;
};

/// Malformed assembly or binary: the message starts with `file:line:column:`.
class AsmError : public Error {
public:
    using Error::Error;
};

/// A program the chip cannot run (out of range, conflict, poison read, deadlock, race): the
/// message names the instruction index, its text and the reason.
class SimError : public Error {
public:
    using Error::Error;
};

} // namespace tessera::chipsim
